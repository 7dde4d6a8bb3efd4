"""What tracing costs, and how fast two traces compare. Prints figures; it asserts nothing (machines here are noisy).

1. Time per training step with `TraceCallback` against the same steps without it, for the digits CNN (16 px, bs 64) and a
   resnet18 (64 px, bs 32, random init), at three levels: 'full' (every phase, forward hooks on every leaf module),
   'light' (data, loss, grads, weights and optimizer state) and ('loss', 'weights'). Targets: <= 2x with everything on,
   <= 1.2x with ('loss', 'weights'). Two figures per level, medians over reps:
   - paired: one fit traces every other step (`every=2`); the ratio of the median traced step to the median untraced step
     of the same fit. Runs on this machine differ by +-10% from each other, steps within a run much less; the untraced
     steps still pay for the forward hooks of the full level, so for 'full' this figure is a lower bound;
   - separate: the median step of a fully traced fit against that of a fit without `TraceCallback` (variants rotated).
2. Trace size per step at each level.
3. Time to compare two traces of 10,000 steps (the light level of the digits CNN: its real lines, repeated with their step
   numbers), when they are identical, when they part at the last step, and in the worst case, where every line differs in its
   float summaries but not in its digests (traces of one run from two machines), so every line is parsed.

Run: python bench/trace_overhead.py [--steps 30] [--reps 5]
"""
import argparse, json, os, statistics, tempfile, time, warnings
from pathlib import Path
import torch
from fastai.vision.all import Callback, accuracy, vision_learner, resnet18
from fastrepro.all import *
from fastrepro.trace import Trace
from fastrepro.diverge import _StopAfter

warnings.filterwarnings('ignore')
TMP = Path(tempfile.mkdtemp(prefix='fastrepro-bench-trace-'))
os.environ['FASTREPRO_RUNS'] = str(TMP/'runs')
LEVELS_RUN = {'none': None, 'full': 'full', 'light': 'light', 'loss+weights': ('loss', 'weights')}

class StepTimer(Callback):
    "Wall time of each training step, from `before_batch` (first) to `after_batch` (last): the loader's time is not counted."
    order = -100
    def __init__(self): self.times = []
    def before_batch(self):
        if self.training: self.t0 = time.perf_counter()
    def after_batch(self):
        if self.training: self.times.append(time.perf_counter() - self.t0)

class _Last(Callback):
    order = 1000
    def __init__(self, timer): self.timer = timer
    def after_batch(self):
        if self.training: self.timer.times[-1] = time.perf_counter() - self.timer.t0

def learners():
    return {'digits CNN': lambda: repro_learner(digits_dblock(), digits_path(), seed=42, model=digits_cnn, bs=64, num_workers=0, metrics=accuracy),
            'resnet18 64px': lambda: repro_learner(digits_dblock(size=64), digits_path(), seed=42, learner_fn=vision_learner, arch=resnet18,
                                                   pretrained=False, bs=32, num_workers=0, metrics=accuracy)}

def step_times(make, level, steps, every=1):
    "Step times (s) of `steps` training steps after 3 warm-up steps, and the trace's bytes per traced step."
    learn, timer = make(), StepTimer()
    cbs = [timer, _Last(timer), _StopAfter(steps + 3)]
    path = TMP/f'{time.time_ns()}.jsonl'
    if LEVELS_RUN[level] is not None: cbs.append(TraceCallback(path, what=LEVELS_RUN[level], every=every))
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-3, cbs=cbs)
    lines = path.read_text().splitlines()[1:] if path.exists() else []
    return timer.times, sum(map(len, lines)) / max(len(lines), 1)

def overhead(steps, reps):
    levels = list(LEVELS_RUN)[1:]
    for name, make in learners().items():
        paired, sep, size, plain = {l: [] for l in levels}, {l: [] for l in levels}, {}, []
        for r in range(reps):
            order = list(LEVELS_RUN)[r % 4:] + list(LEVELS_RUN)[:r % 4]
            for level in order:
                t, b = step_times(make, level, steps)
                if level == 'none': plain.append(statistics.median(t[3:])); continue
                sep[level].append(statistics.median(t[3:])); size[level] = b
                t2, _ = step_times(make, level, steps, every=2)
                paired[level].append(statistics.median(t2[4::2]) / statistics.median(t2[3::2]))  # even steps are traced
        base = statistics.median(plain)
        print(f"\n{name}: plain step {base * 1e3:.1f} ms (medians of {reps} reps x {steps} steps)")
        print(f"  {'level':13s} {'paired':>7s} {'separate':>9s} {'ms/step':>8s} {'KiB/step':>9s}")
        for level in levels:
            m = statistics.median(sep[level])
            print(f"  {level:13s} {statistics.median(paired[level]):6.2f}x {m / base:8.2f}x {m * 1e3:8.1f} {size[level] / 1024:9.1f}")

def comparison(n=10_000):
    learn = repro_learner(digits_dblock(), digits_path(), seed=42, model=digits_cnn, bs=64, num_workers=0, metrics=accuracy)
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-3, cbs=TraceCallback(TMP/'src.jsonl'))
    header, *lines = (TMP/'src.jsonl').read_text().splitlines()
    steps = [json.loads(l) for l in lines]
    def write(path, change=None):
        with open(path, 'w') as f:
            f.write(header + '\n')
            for i in range(n):
                s = dict(steps[i % len(steps)], step=i, epoch=i // len(steps), batch=i % len(steps))
                if change: s = change(i, json.loads(json.dumps(s)))
                f.write(json.dumps(s, separators=(',', ':')) + '\n')
    def last(i, s):
        if i == n - 1: s['events'][-1][3] = '0' * 24
        return s
    def floats(i, s):
        for e in s['events']: e[4] += 1e-9
        return s
    write(TMP/'a.jsonl'); write(TMP/'b.jsonl', last); write(TMP/'c.jsonl', floats)
    mb = (TMP/'a.jsonl').stat().st_size / 2**20
    print(f"\ncomparing two traces of {n} steps ({mb:.0f} MiB each, light level of the digits CNN):")
    for label, other in (('identical', 'a'), ('part at the last step', 'b'), ('every line parsed (other float sums)', 'c')):
        t0 = time.perf_counter(); r = compare_traces(TMP/'a.jsonl', TMP/f'{other}.jsonl'); dt = time.perf_counter() - t0
        print(f"  {label:38s} {dt:6.2f} s   {'identical' if r.identical else f'parts at step {r.global_step}'}")

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--steps', type=int, default=30); ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--skip-overhead', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    if not a.skip_overhead: overhead(a.steps, a.reps)
    comparison()
