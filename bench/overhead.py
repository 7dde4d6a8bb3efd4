"""What fastrepro costs. Prints figures; it asserts nothing (machines here are noisy).

1. fit_one_cycle on the bundled digits with 2 workers, with and without ReproCallback, alternated in one process:
   the ratio of median epoch times (target: overhead <= 2%).
2. The before-fit reseed (set_seed + reseed_dls) on DataLoaders of 1k and 200k items: O(1) means equal times.
3. The per-call cost of the seeding primitives.

Run: python bench/overhead.py [--pairs 5] [--epochs 2]
"""
import argparse, statistics, time, timeit, warnings
import torch
from fastai.vision.all import Learner, accuracy, DataLoaders
from fastai.data.core import TfmdDL, Datasets
from fastrepro.all import *

warnings.filterwarnings('ignore')

def timed_fit(with_repro, epochs, workers):
    dls = digits_dblock().dataloaders(digits_path(), bs=64, num_workers=workers)
    learn = Learner(dls, digits_cnn(), metrics=accuracy)
    cbs = [ReproCallback(seed=42)] if with_repro else []
    with learn.no_bar(), learn.no_logging():
        t = time.perf_counter(); learn.fit_one_cycle(epochs, 1e-2, cbs=cbs); return time.perf_counter() - t

def fit_overhead(pairs, epochs, workers=2):
    timed_fit(True, 1, workers); timed_fit(False, 1, workers)  # warm up: imports, caches, first worker start
    stock, repro = [], []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)  # alternate which goes first
        for r in order: (repro if r else stock).append(timed_fit(r, epochs, workers))
    s, r = statistics.median(stock), statistics.median(repro)
    print(f"1. fit_one_cycle({epochs}) on digits, {workers} workers, {pairs} alternated pairs")
    print(f"   stock median {s:.3f}s  with ReproCallback {r:.3f}s  ratio {r/s:.4f}  overhead {100*(r/s-1):+.2f}%")
    print(f"   stock runs  {' '.join(f'{x:.2f}' for x in stock)}\n   repro runs  {' '.join(f'{x:.2f}' for x in repro)}")

def reseed_cost(n, reps=200):
    dsets = Datasets(range(n), tfms=[[lambda o: torch.tensor(o)]], splits=(list(range(n - n//5)), list(range(n - n//5, n))))
    dls = dsets.dataloaders(bs=64, num_workers=0, dl_type=TfmdDL)
    reseed_dls(dls, 42, 0)
    def before_fit(i=[0]):
        i[0] += 1; set_seed(key(42, 'fit', i[0]), deterministic='warn'); reseed_dls(dls, 42, i[0])
    return timeit.timeit(before_fit, number=reps) / reps

def main(pairs=5, epochs=2):
    fit_overhead(pairs, epochs)
    small, big = reseed_cost(1_000), reseed_cost(200_000)
    print(f"2. before-fit reseed (set_seed + reseed_dls): 1k items {small*1e6:.1f} us, 200k items {big*1e6:.1f} us, "
          f"ratio {big/small:.2f}")
    n = 20000
    for name, f in [('key(seed, item, fit, epoch, loader, i)', lambda: key(42, 'item', 0, 1, 0, 1234)),
                    ('seed_generators (random, numpy, torch)', lambda: seed_generators(1234)),
                    ('torch.manual_seed', lambda: torch.manual_seed(1234)),
                    ('torch.default_generator.manual_seed', lambda: torch.default_generator.manual_seed(1234))]:
        print(f"3. {name:42s} {timeit.timeit(f, number=n)/n*1e6:6.2f} us")

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--pairs', type=int, default=5); p.add_argument('--epochs', type=int, default=2)
    main(**vars(p.parse_args()))
