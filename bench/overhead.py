"""What fastrepro costs. Prints figures; it asserts nothing (machines here are noisy).

1. fit_one_cycle on the bundled digits with 2 workers, stock and with ReproCallback (its default deterministic='warn',
   and deterministic=False to separate the cost of torch's deterministic mode), in rotated order in one process:
   the ratio of median fit times (target: overhead <= 2%).
2. The before-fit reseed (set_seed + reseed_dls) on DataLoaders of 1k and 200k items: O(1) means equal times.
3. The per-call cost of the seeding primitives.

Run: python bench/overhead.py [--rounds 6] [--epochs 2]
"""
import argparse, statistics, time, timeit, warnings
import torch
from fastai.vision.all import Learner, accuracy, DataLoaders
from fastai.data.core import TfmdDL, Datasets
from fastrepro.all import *

warnings.filterwarnings('ignore')

VARIANTS = {'stock': [], 'ReproCallback': [ReproCallback(seed=42)],
            "ReproCallback(deterministic=False)": [ReproCallback(seed=42, deterministic=False)]}

def timed_fit(variant, epochs, workers):
    dls = digits_dblock().dataloaders(digits_path(), bs=64, num_workers=workers)
    learn = Learner(dls, digits_cnn(), metrics=accuracy)
    with learn.no_bar(), learn.no_logging():
        t = time.perf_counter(); learn.fit_one_cycle(epochs, 1e-2, cbs=VARIANTS[variant]); secs = time.perf_counter() - t
    torch.use_deterministic_algorithms(False)  # leave no mode behind for the next variant
    return secs

def fit_overhead(rounds, epochs, workers=2):
    names = list(VARIANTS)
    for v in names: timed_fit(v, 1, workers)  # warm up: imports, caches, first worker start
    times = {v: [] for v in names}
    for i in range(rounds):
        for v in names[i % len(names):] + names[:i % len(names)]: times[v].append(timed_fit(v, epochs, workers))  # rotate the order
    base = statistics.median(times['stock'])
    print(f"1. fit_one_cycle({epochs}) on digits, {workers} workers, {rounds} rounds in rotated order (median of each)")
    for v, ts in times.items():
        m = statistics.median(ts)
        print(f"   {v:36s} {m:.3f}s  ratio {m/base:.4f}  ({' '.join(f'{x:.2f}' for x in ts)})")
    accounted_overhead(epochs, base)

def accounted_overhead(epochs, stock_secs):
    "The seeding work a keyed fit adds, counted and timed directly: immune to the noise of whole-fit timings."
    dls = reseed_dls(digits_dblock().dataloaders(digits_path(), bs=64, num_workers=0), 42)
    ks, n = dls.train.repro_streams, 20000
    per_item = timeit.timeit(lambda: seed_generators(ks._k('item', 1234)), number=n) / n
    items = epochs * (len(dls.train_ds) + len(dls.valid_ds))
    batches = epochs * (len(dls.train) + len(dls.valid))
    secs = (items + batches) * per_item
    return print(f"   accounted: {items} item + {batches} batch seedings x {per_item*1e6:.1f} us = {secs*1e3:.1f} ms, "
                 f"{100*secs/stock_secs:.2f}% of the stock fit (spread over the workers when there are any)")

def reseed_cost(n, reps=200):
    dsets = Datasets(range(n), tfms=[[lambda o: torch.tensor(o)]], splits=(list(range(n - n//5)), list(range(n - n//5, n))))
    dls = dsets.dataloaders(bs=64, num_workers=0, dl_type=TfmdDL)
    reseed_dls(dls, 42, 0)
    def before_fit(i=[0]):
        i[0] += 1; set_seed(key(42, 'fit', i[0]), deterministic='warn'); reseed_dls(dls, 42, i[0])
    return timeit.timeit(before_fit, number=reps) / reps

def main(rounds=6, epochs=2):
    fit_overhead(rounds, epochs)
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
    p.add_argument('--rounds', type=int, default=6); p.add_argument('--epochs', type=int, default=2)
    main(**vars(p.parse_args()))
