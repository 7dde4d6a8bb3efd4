"""What reproducible data-parallel training costs: the same 2-process DDP fit (gloo, CPU, `torchrun`) with and without
`ReproCallback`. Prints figures; it asserts nothing (machines here are noisy).

- baseline: a stock fastai `Learner` inside `learn.distrib_ctx(sync_bn=False, cpu=True)`, its loaders sharded by fastai's
  own `DistributedDL` (with the broadcast moved to the CPU, the one change that lets it run here), no keyed streams;
- fastrepro: `repro_learner` in the same context: keyed streams per rank, `ReproDistributedDL`, the agreement check
  before the fit, the per-rank weight hashes after it, rank 0's manifest, and `set_seed`'s default deterministic mode
  ('warn': torch's deterministic algorithms, with non-deterministic ops counted);
- keys only: the same with `ReproCallback(deterministic=False, manifest=False)`: what the keyed per-rank streams and the
  agreement check cost by themselves.

All three train the digits CNN (random crops, `aug_transforms`, dropout) for `--epochs` epochs at bs=32 per rank, rotating
(baseline, fastrepro, keys only) `--reps` times in the same two processes. The agreement check (`RankGroup.agree`: one digest per
rank, one all-gather) is also timed alone.

Run: python bench/data_parallel.py [--epochs 2] [--reps 4] [--workers 0]
"""
import argparse, os, statistics, subprocess, sys, tempfile, time, warnings
from pathlib import Path
import torch
from fastai.vision.all import Learner, Callback, accuracy
import fastai.distributed  # Learner.distrib_ctx
from fastai.distributed import DistributedDL, DistributedTrainer
from fastrepro.all import digits_path, digits_dblock, digits_cnn, repro_learner
from fastrepro.distributed import RankGroup, ReproDistributedDL

warnings.filterwarnings('ignore')

class CPUDistributedDL(DistributedDL):
    "fastai's DistributedDL with fastrepro's broadcast, on the backend's device (fastai's calls `.cuda()`): the baseline's loaders."
    _broadcast = ReproDistributedDL._broadcast

class CPUSharding(Callback):
    "Makes `distrib_ctx`'s trainer wrap loaders in `CPUDistributedDL` (baseline only)."
    order = DistributedTrainer.order - 1
    def before_fit(self):
        for t in self.learn.cbs:
            if isinstance(t, DistributedTrainer): t._wrap_dl = lambda dl, t=t: dl if isinstance(dl, DistributedDL) else CPUDistributedDL(dl)

def stock_learner(a):
    return Learner(digits_dblock().dataloaders(digits_path(), bs=32, num_workers=a.workers), digits_cnn(), metrics=accuracy, cbs=CPUSharding())

def repro(a, **kw):
    learn = repro_learner(digits_dblock(), digits_path(), seed=42, model=digits_cnn, bs=32, num_workers=a.workers, metrics=accuracy)
    if kw: learn.repro.deterministic, learn.repro.manifest = kw['deterministic'], kw['manifest']
    return learn

VARIANTS = {'baseline': stock_learner, 'fastrepro': repro, 'keys only': lambda a: repro(a, deterministic=False, manifest=False)}

def timed_fit(learn, epochs):
    with learn.no_bar(), learn.no_logging(), learn.distrib_ctx(sync_bn=False, cpu=True):
        torch.distributed.barrier()
        t = time.perf_counter()
        learn.fit_one_cycle(epochs, 1e-2)
        torch.distributed.barrier()
        return time.perf_counter() - t

def child(a):
    rank = int(os.environ['RANK'])
    times = {k: [] for k in VARIANTS}
    for make in VARIANTS.values(): timed_fit(make(a), 1)  # warm-up: first-use costs land on no side
    names = list(VARIANTS)
    for i in range(a.reps):
        for k in names[i % 3:] + names[:i % 3]: times[k].append(timed_fit(VARIANTS[k](a), a.epochs))  # rotated: no side always first
    learn, group = repro(a), RankGroup(rank, torch.distributed.get_world_size())
    agree = []
    for _ in range(2 * a.reps):
        t = time.perf_counter(); group.agree(learn, 42, 0); agree.append(time.perf_counter() - t)
    torch.distributed.barrier()
    if rank == 0: report(a, times, agree)
    torch.distributed.destroy_process_group()

def report(a, times, agree):
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"2 processes (gloo, CPU), digits CNN, {a.epochs} epochs of 22 steps at bs=32 per rank, {a.workers} workers per rank, {a.reps} reps")
    for k, v in times.items():
        paired = [round(y / x, 3) for x, y in zip(times['baseline'], v)]
        print(f"  {k:10s} median {med[k]:6.2f} s  ratio {med[k] / med['baseline']:.3f}  (paired per rep: {paired})")
    print(f"  agreement check alone (digest + all-gather): median {1000 * statistics.median(agree):.1f} ms "
          f"= {100 * statistics.median(agree) / med['fastrepro']:.2f}% of the fastrepro fit")

def main():
    p = argparse.ArgumentParser()
    p.add_argument('--epochs', type=int, default=2); p.add_argument('--reps', type=int, default=4); p.add_argument('--workers', type=int, default=0)
    p.add_argument('--child', action='store_true')
    a = p.parse_args()
    if a.child: return child(a)
    os.environ.setdefault('FASTREPRO_RUNS', tempfile.mkdtemp(prefix='fastrepro-bench-dp-'))
    torchrun = str(Path(sys.executable).with_name('torchrun'))
    subprocess.run([torchrun, '--standalone', '--nproc_per_node=2', __file__, '--child', *sys.argv[1:]], check=True)

if __name__ == '__main__': main()
