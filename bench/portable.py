"""What `numerics='portable'` and `'portable-avx2'` cost per training step, against stock numerics measured in the same run,
for the digits CNN, a tabular model and resnet18, stock at 1 and 2 threads (the modes pin 1); then, for resnet18, each pin
alone, to name the one that costs most. Each setting runs in a fresh interpreter: ATen, MKL and oneDNN fix their code path
at their first use. A step is forward, backward and fastai's Adam on a fixed batch; the figure is the median of `--steps`
steps after 3 warm-up steps.

Run: python bench/portable.py [--steps 20]
"""
import argparse, json, os, statistics, subprocess, sys, time

MODELS = {'digits CNN (64x3x16x16)': 'digits', 'tabular MLP (256x13, 200-100)': 'tabular', 'resnet18 (16x3x64x64)': 'resnet18'}
# each pin alone, as an environment (read at start) or a run-time switch (applied in the child before the first op)
ALONE = {'ATen capability default': ({'ATEN_CPU_CAPABILITY': 'default'}, None), 'MKL_CBWR=COMPATIBLE': ({'MKL_CBWR': 'COMPATIBLE'}, None),
         'oneDNN off': ({}, 'mkldnn'), 'NNPACK off': ({}, 'nnpack'), 'sqrt routed': ({}, 'sqrt'),
         'ATen capability avx2': ({'ATEN_CPU_CAPABILITY': 'avx2'}, None), 'oneDNN pinned to AVX2': ({'ONEDNN_MAX_CPU_ISA': 'AVX2'}, None)}

def _model(name):
    import torch
    from torch import nn
    if name == 'digits':
        from fastrepro.examples import digits_cnn
        return digits_cnn(), torch.randn(64, 3, 16, 16), torch.randint(0, 10, (64,))
    if name == 'tabular':
        from fastai.tabular.model import TabularModel
        return TabularModel([], 13, 3, [200, 100], ps=[0.1, 0.1]), (torch.zeros(256, 0, dtype=torch.long), torch.randn(256, 13)), torch.randint(0, 3, (256,))
    from torchvision.models import resnet18
    return resnet18(num_classes=10), torch.randn(16, 3, 64, 64), torch.randint(0, 10, (16,))

def child(name, numerics, threads, switch, steps):
    import torch
    from fastrepro.numerics import use_numerics, _route_sqrt
    if numerics != 'stock': use_numerics(numerics)
    else: torch.set_num_threads(threads)
    if switch == 'mkldnn': torch.backends.mkldnn.enabled = False
    if switch == 'nnpack': torch.backends.nnpack.set_flags(False)
    if switch == 'sqrt': _route_sqrt(True)
    from fastai.optimizer import Adam
    torch.manual_seed(0)
    model, x, y = _model(name)
    opt, loss_fn, times = Adam(list(model.parameters()), lr=1e-3), torch.nn.CrossEntropyLoss(), []
    for i in range(steps + 3):
        t = time.perf_counter()
        loss = loss_fn(model(*x) if isinstance(x, tuple) else model(x), y)
        loss.backward(); opt.step(); opt.zero_grad()
        if i >= 3: times.append(time.perf_counter() - t)
    print(json.dumps(dict(ms=statistics.median(times) * 1e3, threads=torch.get_num_threads(),
                          capability=torch.backends.cpu.get_cpu_capability())))

def run(name, numerics='stock', threads=1, env=None, switch=None, steps=20) -> dict:
    from fastrepro.numerics import NUMERICS_VARS
    e = {k: v for k, v in os.environ.items() if k not in ('FASTREPRO_NUMERICS', *NUMERICS_VARS)}
    r = subprocess.run([sys.executable, __file__, '--child', name, numerics, str(threads), switch or '-', str(steps)],
                       env={**e, **(env or {})}, capture_output=True, text=True)
    if r.returncode: raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])

def main(steps=20):
    from fastrepro.capture import cpu_info
    import torch
    print(f"CPU: {cpu_info()['model']}, {os.cpu_count()} cores; torch {torch.__version__}; ms per training step, median of {steps}\n")
    print(f"{'model':32s}{'stock 1 thr':>12s}{'stock 2 thr':>12s}{'portable':>10s}{'vs stock 1':>11s}{'vs stock 2':>11s}"
          f"{'p-avx2':>9s}{'vs stock 1':>11s}{'vs stock 2':>11s}")
    for label, name in MODELS.items():
        s1, s2 = run(name, steps=steps)['ms'], run(name, threads=2, steps=steps)['ms']
        p, a = run(name, 'portable', steps=steps)['ms'], run(name, 'portable-avx2', steps=steps)['ms']
        print(f"{label:32s}{s1:12.1f}{s2:12.1f}{p:10.1f}{p/s1:10.2f}x{p/s2:10.2f}x{a:9.1f}{a/s1:10.2f}x{a/s2:10.2f}x")
    print(f"\nresnet18, one thread, each pin alone against stock:")
    base = run('resnet18', steps=steps)['ms']
    for label, (env, switch) in ALONE.items():
        ms = run('resnet18', env=env, switch=switch, steps=steps)['ms']
        print(f"  {label:28s}{ms:8.1f} ms  {ms/base:5.2f}x")

if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        name, numerics, threads, switch, steps = sys.argv[2:7]
        child(name, numerics, int(threads), None if switch == '-' else switch, int(steps))
    else:
        p = argparse.ArgumentParser(description=__doc__.splitlines()[0]); p.add_argument('--steps', type=int, default=20)
        main(p.parse_args().steps)
