"""What exact resume costs. Prints figures; it asserts nothing (machines here are noisy).

1. Time from `learn.resume()` to the first trained batch, resuming at batch k of an epoch of 50,000 items (the bundled digits
   repeated), for k = 0, half the epoch and its last batch (target: flat in k). Beside it, what a replaying resume
   (Composer-style "spinning") would take: iterating the loader through the k skipped batches, loading and transforming
   their items, then the same first batch.
2. Checkpoint write time against `learn.save(with_opt=True)` on the same model and optimizer state, for the digits CNN and
   a resnet18 (target <= 1.2x): what training waits for (`ReproCheckpoint.save`: a snapshot, then a writer thread), and
   the time until the checkpoint is durable (`wait()`: serialised, hashed, fsynced, renamed, listed in the manifest).

Run: python bench/resume.py [--items 50000] [--reps 7]
"""
import argparse, os, statistics, tempfile, time, warnings
from pathlib import Path
import torch
from fastai.vision.all import Callback, CancelFitException, DataBlock, ImageBlock, CategoryBlock, parent_label, RandomSplitter, RandomCrop, accuracy
from fastai.vision.models import resnet18
from fastrepro.all import *

warnings.filterwarnings('ignore')
TMP = Path(tempfile.mkdtemp(prefix='fastrepro-bench-resume-'))
os.environ['FASTREPRO_RUNS'] = str(TMP/'runs')

def big_learner(n_items, model=digits_cnn):
    "A digits learner over `n_items` items: the bundled PNGs, repeated."
    files = sorted(digits_path().rglob('*.png'))
    items = lambda _: [files[i % len(files)] for i in range(n_items)]
    dblock = DataBlock((ImageBlock, CategoryBlock), get_items=items, get_y=parent_label, splitter=RandomSplitter(0.02), item_tfms=RandomCrop(16))
    learn = repro_learner(dblock, digits_path(), seed=42, model=model, num_workers=0, metrics=accuracy)
    learn.model_dir = TMP/'models'
    return learn

class SaveAt(Callback):
    "Checkpoint before training batch `its[0]`, after the batches ending at the others; stop after the last."
    order = ReproCheckpoint.order + 1
    def __init__(self, its): self.its = its
    def ck(self): return next(c for c in self.learn.cbs if isinstance(c, ReproCheckpoint))
    def before_batch(self):
        if self.training and self.iter == 0 == self.its[0]: self.ck().save(0, 0)
    def after_batch(self):
        if self.training and self.iter + 1 in self.its[1:]: self.ck().save(0, self.iter + 1)
        if self.training and self.iter + 1 == self.its[-1]: raise CancelFitException()

class FirstBatch(Callback):
    "Record when the first trained batch ends, then stop the fit."
    order = 99
    def after_batch(self):
        if self.training: self.t = time.perf_counter(); raise CancelFitException()

def resume_times(n_items):
    learn = big_learner(n_items)
    n = len(learn.dls.train)
    ks = [0, n // 2, n - 1]
    with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(1, 1e-2, cbs=[ReproCheckpoint(every=10**9, keep=None), SaveAt(ks)])
    ckpts = {int(p.stem.split('-b')[-1]): p for p in (TMP/'models').glob('*-e0-b*.pth')}
    print(f"1. resume to the first trained batch, {n_items} items, {n} batches per epoch")
    print(f"   {'k':>6} {'resume (s)':>11} {'replay (s)':>11}")
    for k in ks:
        fresh = big_learner(n_items)
        fb = FirstBatch()
        t0 = time.perf_counter()
        with fresh.no_bar(), fresh.no_logging(): fresh.resume(ckpts[k], cbs=fb)
        t_resume = fb.t - t0
        spin = big_learner(n_items)
        spin.dls.train.repro_streams.pin(0)
        t0 = time.perf_counter()
        for i, _ in zip(range(k), spin.dls.train): pass  # what spinning loads and throws away
        print(f"   {k:>6} {t_resume:>11.2f} {time.perf_counter() - t0 + t_resume:>11.2f}")

class WriteTimes(Callback):
    "At the fit's 3rd batch, time ReproCheckpoint.save and learn.save(with_opt=True), interleaved."
    order = ReproCheckpoint.order + 1
    def __init__(self, reps): self.reps, self.times = reps, {'checkpoint': [], 'durable': [], 'learn.save': []}
    def after_batch(self):
        if not self.training or self.iter != 2: return
        ck = next(c for c in self.learn.cbs if isinstance(c, ReproCheckpoint))
        for _ in range(self.reps):
            t0 = time.perf_counter(); ck.save(0, 3); self.times['checkpoint'].append(time.perf_counter() - t0)
            ck.wait(); self.times['durable'].append(time.perf_counter() - t0)
            t0 = time.perf_counter(); self.learn.save('plain', with_opt=True); self.times['learn.save'].append(time.perf_counter() - t0)
        raise CancelFitException()

def write_times(reps):
    print("2. checkpoint write against learn.save(with_opt=True), median of", reps)
    for name, model in (('digits CNN', digits_cnn), ('resnet18', lambda: resnet18(num_classes=10))):
        learn, wt = big_learner(2000, model), WriteTimes(reps)
        with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(1, 1e-3, cbs=[ReproCheckpoint(every=10**9), wt])
        c, d, s = (statistics.median(wt.times[k]) for k in ('checkpoint', 'durable', 'learn.save'))
        size = max(p.stat().st_size for p in (TMP/'models').glob('*.pth'))
        print(f"   {name:<11} learn.save {s*1000:7.1f} ms   checkpoint: training waits {c*1000:7.1f} ms ({c/s:4.2f}x), "
              f"durable after {d*1000:7.1f} ms ({d/s:4.2f}x)   ({size/1e6:.1f} MB)")

if __name__ == '__main__':
    p = argparse.ArgumentParser()
    p.add_argument('--items', type=int, default=50_000); p.add_argument('--reps', type=int, default=7)
    a = p.parse_args()
    torch.set_num_threads(1)
    resume_times(a.items)
    write_times(a.reps)
