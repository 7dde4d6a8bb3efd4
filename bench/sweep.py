"""What a seed sweep costs. Prints figures; it asserts nothing (machines here are noisy).

1. Start-up: a fresh process that imports fastai and fastrepro and builds the digits learner, without training.
2. One seed alone (`run_seed`, one thread), then sweeps of n seeds with p at a time, for each p in --workers: the wall
   time against the ideal n/p x one run (target: within 10%; one run includes its start-up).
3. Summary, band and plot of a synthetic sweep of 100 seeds x 50 epochs (target: under a second).

Run: python bench/sweep.py [--seeds 8] [--workers 1 2] [--epochs 1]
"""
import argparse, os, subprocess, sys, tempfile, time, warnings
from functools import partial
from pathlib import Path
import cloudpickle, numpy as np
from fastai.vision.all import accuracy
from fastrepro.all import *
from fastrepro.sweep import Sweep, run_seed
from fastrepro.fresh import fresh_payload
from fastrepro.sweep import Sweep, seed_sweep, run_seed

warnings.filterwarnings('ignore')

def make_digits(seed):
    return repro_learner(digits_dblock(), digits_path(), seed=seed, model=digits_cnn, num_workers=0, metrics=accuracy)

STARTUP = ("import torch; torch.set_num_threads(1); from fastai.vision.all import accuracy; from fastrepro.all import *; "
           "repro_learner(digits_dblock(), digits_path(), seed=0, model=digits_cnn, num_workers=0, metrics=accuracy)")

def startup_s(reps=3):
    times = []
    for _ in range(reps):
        t = time.perf_counter(); subprocess.run([sys.executable, '-c', STARTUP], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return min(times)

def synthetic(n_seeds=100, n_epochs=50):
    rng = np.random.default_rng(0)
    runs = {s: dict(status='completed', metric_names=['train_loss', 'valid_loss', 'accuracy'],
                    epochs=rng.random((n_epochs, 3)).tolist()) for s in range(n_seeds)}
    return Sweep('synthetic', list(range(n_seeds)), runs)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, default=8); ap.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--epochs', type=int, default=1)
    a = ap.parse_args()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    fit = lambda l, e=a.epochs: l.fit_one_cycle(e, 1e-2)
    print(f"cores: {os.cpu_count()}")
    print(f"1. start-up of a fresh process (import fastai + fastrepro, build the learner): {startup_s():.1f} s")
    t = time.perf_counter(); r = run_seed(fresh_payload(partial(make_digits, 100), fit, threads=1))
    one = time.perf_counter() - t
    assert r['status'] == 'completed', r
    print(f"2. one seed alone: {one:.1f} s")
    for p in a.workers:
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            sweep = seed_sweep(make_digits, fit, seeds=range(a.seeds), max_workers=p, name='bench', runs=d, show_progress=False)
            wall = time.perf_counter() - t
        ideal = a.seeds / p * one
        print(f"   sweep of {a.seeds} seeds, {p} at a time: {wall:.1f} s; ideal n/p x one run = {ideal:.1f} s; "
              f"ratio {wall / ideal:.2f}; {len(sweep.completed)} completed")
    big = synthetic()
    t = time.perf_counter(); big.summary(); big.band('accuracy'); s_t = time.perf_counter() - t
    import matplotlib; matplotlib.use('Agg')
    t = time.perf_counter(); big.plot(); p_t = time.perf_counter() - t
    print(f"3. 100 seeds x 50 epochs: summary + band {s_t:.2f} s, plot {p_t:.2f} s")

if __name__ == '__main__': main()
