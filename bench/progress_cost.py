"""What the per-epoch progress write costs: one `record_progress` (the `running` manifest rewritten, fsynced, renamed)
against the epoch it follows, for the smallest learner in the package (wine, 142 rows) and the digits CNN. Prints figures only.

Run: python bench/progress_cost.py [--reps 20]
"""
import argparse, statistics, tempfile, time
from fastrepro.all import wine_learner, repro_learner, digits_dblock, digits_path, digits_cnn, ReproCallback
from fastrepro.record import record_progress, start_fit_manifest

def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def measure(name, learn, reps, runs):
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-3, cbs=ReproCallback(manifest=False))  # warm: the first epoch pays for lazy set-up
    with learn.no_bar(), learn.no_logging(): epoch = statistics.median(timed(lambda: learn.fit(5, 1e-3)) for _ in range(3)) / 5  # each with its write
    m = start_fit_manifest(learn, seed=0)
    write = statistics.median(timed(lambda: record_progress(learn, m, runs)) for _ in range(reps))
    print(f"{name:7s} epoch {epoch*1e3:8.1f} ms   progress write {write*1e3:6.2f} ms   ratio {write/epoch:7.2%} of an epoch")

def main(reps=20):
    runs = tempfile.mkdtemp(prefix='progress-cost-')
    measure('wine', wine_learner(seed=0, layers=(8,)), reps, runs)
    measure('digits', repro_learner(digits_dblock(), digits_path(), seed=0, model=digits_cnn, num_workers=0), reps, runs)

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0]); p.add_argument('--reps', type=int, default=20)
    main(**vars(p.parse_args()))
