"""What a fresh run costs, cold and warm (`fastrepro.warm`), measured in one run of this script.

    python bench/fresh_run_cost.py [--repeats 3] [--cpu Haswell]

1. The time from asking for a fresh run to its first trained batch (the digits CNN of the README, `run_fresh`'s child):
   cold (a new interpreter imports torch, fastai and fastrepro), warm and first (the session's warm interpreter starts
   and imports them, then forks the run), and warm (forked from the ready interpreter). Medians of REPEATS (default 3).
2. The README's `verify_reproducible(make_learner, fit, checks=('fresh', 'history', 'workers'))`: cold, warm from a
   session with no warm interpreter yet (they start inside the call), and warm again.
3. With `--cpu MODEL`: one fresh run of a digits epoch on the emulated MODEL (`qemu-x86_64`, where the import alone takes
   about 40 s): cold, warm and first, warm. A warm interpreter per CPU model saves where a model runs more than once
   (`find_divergence(cpus=)`, `drill --cpu` over several runs).

Both figures follow the machine's speed, which changes from hour to hour: compare the ratios of one run. With
PYTHONDONTWRITEBYTECODE set and no precompiled `.pyc` in the environment, every cold run compiles torch's and fastai's
sources again (13.6 s of CPU against 7.8 s for one epoch, measured before warm runs): `.ci/run` installs with
`--compile-bytecode`, as pip does by default.
"""
import argparse, statistics, sys, tempfile, time, warnings
from pathlib import Path
warnings.filterwarnings('ignore')
import cloudpickle, torch
from fastai.callback.core import Callback
from fastai.vision.all import accuracy
from fastrepro.all import repro_learner, digits_dblock, digits_path, digits_cnn, verify_reproducible
from fastrepro.fresh import launch, pack_for_child, run_fresh, fresh_payload
from fastrepro.warm import shutdown_warm

def make_learner(num_workers=2): return repro_learner(digits_dblock(), digits_path(), seed=42, model=digits_cnn, num_workers=num_workers, metrics=accuracy)
def fit(learn): learn.fit_one_cycle(2, 1e-2)

class FirstBatch(Callback):
    "Stop after the first trained batch, and note when it ended."
    def after_batch(self):
        from fastai.callback.core import CancelFitException  # imported in the child: fastai makes these classes at import
        if self.training: self.learn.first_batch_at = time.time(); raise CancelFitException()

def first_batch():
    learn = make_learner(num_workers=0)
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-2, cbs=FirstBatch())
    return learn.first_batch_at

def to_first_batch(warm:bool, folder:Path, tag:str) -> float:
    "Seconds from asking for a fresh run to the end of its first trained batch."
    t0 = time.time()
    res, out = launch(pack_for_child(first_batch), folder, tag, warm=warm)
    if res.returncode != 0: raise RuntimeError(res.stderr[-2000:])
    return torch.load(out) - t0

def timed(f) -> float:
    t0 = time.perf_counter(); f(); return time.perf_counter() - t0

def emulated_epoch(cpu:str, warm:bool) -> float:
    return timed(lambda: run_fresh(fresh_payload(lambda: make_learner(num_workers=0), lambda l: l.fit(1, 1e-2)), cpu=cpu, warm=warm))

if __name__ == '__main__':
    p = argparse.ArgumentParser(); p.add_argument('--repeats', type=int, default=3); p.add_argument('--cpu')
    a = p.parse_args(); REPEATS = a.repeats
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the children cannot import this script
    digits_path()
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cold = statistics.median(to_first_batch(False, d, f'cold{i}') for i in range(REPEATS))
        first = to_first_batch(True, d, 'first')
        warm = statistics.median(to_first_batch(True, d, f'warm{i}') for i in range(REPEATS))
    print(f"to the first trained batch: cold {cold:.2f} s, warm and first {first:.2f} s, warm {warm:.2f} s "
          f"({cold / warm:.0f}x; medians of {REPEATS})", flush=True)
    shutdown_warm()  # the verify call below starts from a session with no warm interpreter
    verify = lambda warm: verify_reproducible(make_learner, fit, checks=('fresh', 'history', 'workers'), show_progress=False, warm=warm)
    v_cold, v_first, v_again = timed(lambda: verify(False)), timed(lambda: verify(True)), timed(lambda: verify(True))
    print(f"the README's verify call (fresh, history, workers): cold {v_cold:.1f} s, warm from a new session {v_first:.1f} s "
          f"({v_cold / v_first:.1f}x), warm again {v_again:.1f} s ({v_cold / v_again:.1f}x)")
    if a.cpu:
        c, f, w = emulated_epoch(a.cpu, False), emulated_epoch(a.cpu, True), emulated_epoch(a.cpu, True)
        print(f"one digits epoch on an emulated {a.cpu}: cold {c:.1f} s, warm and first {f:.1f} s, warm {w:.1f} s "
              f"(a second run of the model saves {c - w:.0f} s)")
