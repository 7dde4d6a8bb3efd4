"""What fastrepro costs. Prints figures; it asserts nothing (machines here are noisy).

1. fit_one_cycle on the bundled digits with 2 workers, stock and with ReproCallback (its default deterministic='warn',
   and deterministic=False to separate the cost of torch's deterministic mode), in rotated order in one process:
   the ratio of median fit times (target: overhead <= 2%).
2. The before-fit reseed (set_seed + reseed_dls) on DataLoaders of 1k and 200k items: O(1) means equal times.
3. The per-call cost of the seeding primitives.
4. The per-fit canonical state and per-pass order reset (O(parameters), and one pass over a language model's documents),
   and what a pass outside a fit pays to give the generators back.

Run: python bench/overhead.py [--rounds 6] [--epochs 2]
"""
import argparse, statistics, time, timeit, warnings
from types import SimpleNamespace
import torch
from fastai.vision.all import Learner, accuracy, DataLoaders
from fastai.data.core import TfmdDL, Datasets
from fastrepro.all import *
from fastrepro.seed import rng_states, set_rng_states, seed_generators
from fastrepro.data import reseed_dls, reset_orders
from fastrepro.callback import canonical_state
from fastai.text.data import LMDataLoader
from fastai.vision.models import resnet18
from torch import nn

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
        i[0] += 1; set_seed(stream_seed(42, 'fit', i[0]), deterministic='warn'); reseed_dls(dls, 42, i[0])
    return timeit.timeit(before_fit, number=reps) / reps

def per_call(f, n): return timeit.timeit(f, number=n) / n

def canonical_costs():
    "canonical_state on models of 24k and 11.7M parameters, with every grad set as after lr_find."
    for name, model in [('digits CNN', digits_cnn()), ('resnet18', resnet18(num_classes=10))]:
        for p in model.parameters(): p.grad = torch.zeros_like(p)
        learn = SimpleNamespace(model=model)  # canonical_state reads only `learn.model`
        n = sum(p.numel() for p in model.parameters())
        print(f"4. canonical_state, {name} ({n} parameters, {len(list(model.parameters()))} tensors): "
              f"{per_call(lambda: canonical_state(learn), 2000)*1e6:.1f} us")

def order_reset_costs():
    "reset_orders against the LMDataLoader shuffle it precedes, for 1k to 1M documents."
    for n in (1_000, 100_000, 1_000_000):
        dl = LMDataLoader([torch.zeros(2, dtype=torch.long)] * n, lens=[2] * n, bs=4, seq_len=1, shuffle=True)
        reps = max(3, 30_000 // n)
        reset, shuffle = per_call(lambda: reset_orders(dl), reps), per_call(lambda: dl.shuffle_fn(None), reps)
        print(f"4. reset_orders, {n:>9} documents: {reset*1e3:8.3f} ms; the LMDataLoader shuffle after it {shuffle*1e3:8.3f} ms "
              f"(reset/shuffle {reset/shuffle:.2f})")

def free_pass_costs():
    "What a pass outside a fit pays per batch to give the generators back: rng_states + set_rng_states."
    s = rng_states()
    print(f"4. giving the generators back, per batch of a free pass: {per_call(lambda: set_rng_states(rng_states()), 2000)*1e6:.1f} us; "
          f"taking them per fit (before_fit): {per_call(rng_states, 2000)*1e6:.1f} us")
    dls = digits_dblock().dataloaders(digits_path(), bs=64, num_workers=0)
    stock = per_call(dls.train.one_batch, 20)
    reseed_dls(dls, 42, fit=None)
    keyed = per_call(dls.train.one_batch, 20)
    print(f"4. one_batch of 64 digits, main process: stock {stock*1e3:.1f} ms, keyed free pass {keyed*1e3:.1f} ms (ratio {keyed/stock:.3f})")

def main(rounds=6, epochs=2):
    canonical_costs(); order_reset_costs(); free_pass_costs()
    fit_overhead(rounds, epochs)
    small, big = reseed_cost(1_000), reseed_cost(200_000)
    print(f"2. before-fit reseed (set_seed + reseed_dls): 1k items {small*1e6:.1f} us, 200k items {big*1e6:.1f} us, "
          f"ratio {big/small:.2f}")
    n = 20000
    for name, f in [('stream_seed(seed, item, fit, epoch, loader, i)', lambda: stream_seed(42, 'item', 0, 1, 0, 1234)),
                    ('seed_generators (random, numpy, torch)', lambda: seed_generators(1234)),
                    ('torch.manual_seed', lambda: torch.manual_seed(1234)),
                    ('torch.default_generator.manual_seed', lambda: torch.default_generator.manual_seed(1234))]:
        print(f"3. {name:42s} {timeit.timeit(f, number=n)/n*1e6:6.2f} us")

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--rounds', type=int, default=6); p.add_argument('--epochs', type=int, default=2)
    main(**vars(p.parse_args()))
