"""What one fresh run costs: wall and CPU seconds of `run_fresh` training the digits CNN for N epochs in a new interpreter.

    python bench/fresh_run_cost.py [EPOCHS]

Most of a fresh run is importing torch, torchvision and fastai. With PYTHONDONTWRITEBYTECODE set and no precompiled
`.pyc` in the environment (a plain `uv pip install`), every run compiles their sources again: measured 13.6 s of CPU for
one epoch, against 7.8 s after `python -m compileall -q -j 2 .venv/lib/python3.11/site-packages` (what
`uv pip install --compile-bytecode`, and pip by default, do at install time).
"""
import resource, sys, time, warnings
warnings.filterwarnings('ignore')
import cloudpickle
from fastai.vision.all import accuracy
from fastrepro.all import repro_learner, digits_dblock, digits_path, digits_cnn
from fastrepro.fresh import run_fresh, fresh_payload

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
def make(): return repro_learner(digits_dblock(), digits_path(), seed=1, model=digits_cnn, num_workers=0, metrics=accuracy)
def fit(learn): learn.fit_one_cycle(EPOCHS, 1e-2)

if __name__ == '__main__':
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the child cannot import this script
    digits_path()
    t = time.time(); run_fresh(fresh_payload(make, fit, threads=1))
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"one fresh run, {EPOCHS} epoch(s): {time.time() - t:.1f} s wall, {ru.ru_utime + ru.ru_stime:.1f} s CPU; "
          f"bytecode writing {'off' if sys.flags.dont_write_bytecode else 'on'}")
