"""GPU determinism check: run on a CUDA machine with `python tests/gpu_check.py`. CI never needs a GPU.

- two fresh processes of a small CNN on the digits (GPU, 0 workers, aug_transforms on the GPU) must give bitwise-equal
  weights with deterministic='warn' and with deterministic=True;
- CUBLAS_WORKSPACE_CONFIG: set to ':4096:8' when unset and CUDA is not yet initialised, kept when valid, and a warning
  ('set-late') when CUDA was initialised first;
- the time of deterministic mode against deterministic=False;
- with 2 or more GPUs: two `torchrun --nproc_per_node=2` launches of tests/dist_job.py with `learn.distrib_ctx()` (NCCL,
  SyncBatchNorm), NCCL_ALGO=Ring and NCCL_PROTO=Simple, must give bitwise-equal weights, equal on both ranks.
Prints one line per figure and exits non-zero if a check fails.
"""
import hashlib, json, os, subprocess, sys, time, warnings

def child(mode, epochs):
    import torch
    from fastai.vision.all import accuracy
    from fastrepro.all import repro_learner, digits_dblock, digits_path, digits_cnn
    det = {'warn': 'warn', 'true': True, 'false': False}[mode]
    learn = repro_learner(digits_dblock(size=32), digits_path(), seed=42, model=lambda: digits_cnn(), bs=128,
                          num_workers=0, deterministic=det, metrics=accuracy)
    with learn.no_bar(), learn.no_logging(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        learn.fit_one_cycle(1, 1e-2)  # warm-up fit: cuDNN and cuBLAS handles
        torch.cuda.synchronize(); t = time.perf_counter()
        learn.fit_one_cycle(epochs, 1e-2)
        torch.cuda.synchronize(); secs = time.perf_counter() - t
    h = hashlib.sha256()
    for k, v in learn.model.state_dict().items(): h.update(k.encode()); h.update(v.detach().cpu().numpy().tobytes())
    rec = learn.repro_record
    print(json.dumps(dict(weights=h.hexdigest(), secs=secs, acc=float(learn.recorder.values[-1][-1]),
                          cublas=os.environ.get('CUBLAS_WORKSPACE_CONFIG'), record=rec.as_dict(),
                          device=str(next(learn.model.parameters()).device), gpu=torch.cuda.get_device_name(),
                          nondet_warnings=sorted({str(x.message)[:120] for x in w if 'deterministic' in str(x.message)}))))

def run(mode, epochs, env=None):
    out = subprocess.run([sys.executable, __file__, '--child', mode, str(epochs)], capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    if out.returncode: sys.exit(f"child {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])

def cublas_late():
    import torch
    from fastrepro.seed import set_seed
    os.environ.pop('CUBLAS_WORKSPACE_CONFIG', None)
    torch.ones(2, 2, device='cuda') @ torch.ones(2, 2, device='cuda')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always'); rec = set_seed(1, deterministic='warn')
    return rec.cublas_action, any('already initialised' in str(x.message) for x in w)

def multi_gpu():
    "Two 2-GPU launches (NCCL, deterministic algorithms and protocol) must agree bitwise, and so must their ranks."
    import tempfile
    from pathlib import Path
    job, d = Path(__file__).with_name('dist_job.py'), Path(tempfile.mkdtemp())
    env = {**os.environ, 'NCCL_ALGO': 'Ring', 'NCCL_PROTO': 'Simple', 'FASTREPRO_RUNS': str(d/'runs')}
    res = []
    for name in ('a', 'b'):
        t = time.perf_counter()
        p = subprocess.run([str(Path(sys.executable).with_name('torchrun')), '--standalone', '--nproc_per_node=2', str(job),
                            str(d/name), '--gpu', '--workers', '2'], capture_output=True, text=True, env=env, timeout=600)
        ranks = [json.loads((d/f'{name}.rank{r}.json').read_text()) for r in (0, 1) if (d/f'{name}.rank{r}.json').exists()]
        if p.returncode or len(ranks) < 2: print(f"multi-GPU launch failed:\n{p.stderr[-3000:]}\n{ranks}"); return False
        res.append(ranks); print(f"multi-GPU launch {name}: {time.perf_counter() - t:.1f}s, weights {[r['weights'][:12] for r in ranks]}")
    same = res[0][0]['weights'] == res[1][0]['weights'] and all(r[0]['weights'] == r[1]['weights'] for r in res)
    print(f"multi-GPU (2 ranks, NCCL): identical across launches and ranks={same}")
    return same

def main(epochs=3):
    import torch
    if not torch.cuda.is_available(): print("no CUDA device: nothing to check"); return 0
    ok, res = True, {}
    os.environ.pop('CUBLAS_WORKSPACE_CONFIG', None)  # the children start without it, so set_seed must set it
    for mode in ('warn', 'true', 'false'):
        a, b = run(mode, epochs), run(mode, epochs)
        res[mode] = (a, b)
        same = a['weights'] == b['weights']
        print(f"deterministic={mode:5s} on {a['gpu']} ({a['device']}): identical={same} acc={a['acc']:.4f} "
              f"time {a['secs']:.2f}s/{b['secs']:.2f}s cublas={a['cublas']} record.cublas_action={a['record']['cublas_action']} "
              f"nondet warnings={a['nondet_warnings']}")
        if mode != 'false':
            ok &= same and a['cublas'] == ':4096:8' and a['record']['cublas_action'] == 'set'
    t_det = min(x['secs'] for x in res['true']); t_warn = min(x['secs'] for x in res['warn']); t_off = min(x['secs'] for x in res['false'])
    print(f"slowdown vs deterministic=False: warn {t_warn/t_off:.3f}x, strict {t_det/t_off:.3f}x")
    kept = run('warn', 1, {'CUBLAS_WORKSPACE_CONFIG': ':16:8'})
    print(f"user CUBLAS_WORKSPACE_CONFIG=':16:8' kept: {kept['cublas'] == ':16:8' and kept['record']['cublas_action'] == 'kept'}")
    ok &= kept['cublas'] == ':16:8'
    action, warned = cublas_late()
    print(f"CUBLAS set after CUDA init: action={action} warned={warned}")
    ok &= action == 'set-late' and warned
    if torch.cuda.device_count() >= 2: ok &= multi_gpu()
    else: print("multi-GPU: fewer than 2 GPUs, not checked")
    print('GPU CHECK PASSED' if ok else 'GPU CHECK FAILED')
    return 0 if ok else 1

if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--child': child(sys.argv[2], int(sys.argv[3]))
    else: sys.exit(main())
