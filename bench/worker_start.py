"""What a fit with loader workers costs under each multiprocessing start method, stock fastai and fastrepro side by side.
Prints figures; it asserts nothing (machines here are noisy).

For each start method (fork; spawn; forkserver; forkserver with fastai preloaded in its server) a fresh process fits the
bundled digits (a third of them, 2 epochs) with 0 and 2 workers, stock fastai (`Learner` after fastai's `set_seed`) and
through `repro_learner`, in rotated order. It prints each fit's seconds, the extra seconds that 2 workers cost over none,
and fastrepro's time over stock's at 2 workers. fastai starts its workers afresh every pass (train and valid: 4 passes
here), so under spawn and forkserver each pass pays for its workers' imports, stock or not.

Run: python bench/worker_start.py [--rounds 2] [--epochs 2]
"""
import argparse, json, statistics, subprocess, sys

CHILD = r'''
import json, multiprocessing as mp, sys, time, warnings
def fit(kind, workers, epochs):
    import fastai.torch_core
    from fastai.vision.all import Learner, accuracy
    from fastrepro.all import repro_learner, digits_dblock, digits_path, digits_cnn
    path, dblock = digits_path(), digits_dblock(every=3)
    if kind == 'stock':
        fastai.torch_core.set_seed(42)
        learn = Learner(dblock.dataloaders(path, num_workers=workers), digits_cnn(), metrics=accuracy)
    else: learn = repro_learner(dblock, path, seed=42, model=digits_cnn, num_workers=workers, metrics=accuracy)
    with learn.no_bar(), learn.no_logging():
        t = time.perf_counter(); learn.fit(epochs, 1e-2); return time.perf_counter() - t
if __name__ == '__main__':
    warnings.filterwarnings('ignore')
    method, preload, rounds, epochs = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3]), int(sys.argv[4])
    mp.set_start_method(method, force=True)
    if preload: mp.set_forkserver_preload(['fastai.vision.all', 'fastrepro.all'])
    fit('stock', 2, 1)  # warm the data, the imports, and forkserver's server (started at the first worker)
    plan = [(k, w) for k in ('stock', 'fastrepro') for w in (0, 2)]
    out = {f'{k}/{w}': [] for k, w in plan}
    for r in range(rounds):
        for k, w in plan[r % len(plan):] + plan[:r % len(plan)]: out[f'{k}/{w}'].append(fit(k, w, epochs))
    print(json.dumps(out))
'''

def run(method, preload, rounds, epochs) -> dict:
    p = subprocess.run([sys.executable, '-c', CHILD, method, str(int(preload)), str(rounds), str(epochs)], capture_output=True, text=True)
    if p.returncode: raise RuntimeError(f"{method}: {p.stderr[-2000:]}")
    return {k: statistics.median(v) for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items()}

def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument('--rounds', type=int, default=2); a.add_argument('--epochs', type=int, default=2)
    a = a.parse_args()
    print(f"digits (a third), {a.epochs} epochs, median of {a.rounds}; seconds per fit")
    print(f"{'start method':28s} {'stock 0':>8s} {'stock 2':>8s} {'repro 0':>8s} {'repro 2':>8s} {'2 workers cost':>15s} {'repro/stock at 2':>17s}")
    for method, preload in (('fork', False), ('spawn', False), ('forkserver', False), ('forkserver', True)):
        t = run(method, preload, a.rounds, a.epochs)
        extra = t['stock/2'] - t['stock/0']
        print(f"{method + (' + preload' if preload else ''):28s} {t['stock/0']:8.2f} {t['stock/2']:8.2f} {t['fastrepro/0']:8.2f} "
              f"{t['fastrepro/2']:8.2f} {extra:+14.2f}s {t['fastrepro/2'] / t['stock/2']:17.2f}", flush=True)

if __name__ == '__main__': main()
