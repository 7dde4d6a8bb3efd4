"""`verify_reproducible` in fresh Python processes: it passes a clean pipeline and catches the faults a fresh interpreter
reveals, among them two that a forked child would miss, and each of its checks fails on a pipeline broken for it. The
contract itself, on every fastai application, is `tests/test_apps.py`."""
import os, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import pytest

@pytest.fixture(scope='module')
def two_at_a_time():
    "Two fresh runs at once: each spends most of its time importing torch and fastai, on one core."
    with ThreadPoolExecutor(2) as pool: yield pool

def _tabular(entropy):
    import torch
    from fastrepro.all import wine_learner
    learn = wine_learner(seed=1, layers=(16,))
    if entropy:
        g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), 'little'))
        with torch.no_grad():
            for p in learn.model.parameters(): p.add_(torch.randn(p.shape, generator=g) * 1e-3)
    return learn

def test_verify_reproducible_fresh_processes(two_at_a_time):
    import cloudpickle
    from fastrepro.verify import verify_reproducible
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the children cannot import this test module
    fit = lambda learn: learn.fit_one_cycle(2, 1e-2)
    clean = verify_reproducible(lambda: _tabular(False), fit, runs=2, executor=two_at_a_time)
    assert clean.identical and clean.max_abs_diff == 0 and clean.first_diff_epoch is None
    noisy = verify_reproducible(lambda: _tabular(True), fit, runs=2, executor=two_at_a_time)
    assert not noisy.identical and noisy.max_abs_diff > 0 and noisy.first_diff_epoch == 0

@pytest.fixture
def fragile(monkeypatch):
    "tests/fragile.py, imported by reference in the fresh runs, which execute it themselves."
    import fragile
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get('PYTHONPATH')])))
    monkeypatch.setenv('PYTHONHASHSEED', '0')  # pinned here: each fresh run must still get a hash seed of its own
    return fragile

@pytest.mark.parametrize('pipeline,warm', [('features_from_a_set', True), ('features_from_a_set', False), ('jittered_init', True),
                                           ('global_random_before_seeding', True)])
def test_verify_reproducible_catches_what_only_a_fresh_interpreter_reveals(pipeline, warm, fragile, two_at_a_time):
    """Negative controls of freshness: a forked child, or one sharing a pinned hash seed, would call these pipelines
    reproducible. Fresh runs from warm interpreters (`fastrepro.warm`) catch them as cold ones do."""
    from fastrepro.verify import verify_reproducible
    r = verify_reproducible(getattr(fragile, pipeline), fragile.fit, runs=2, executor=two_at_a_time, warm=warm)
    assert not r.identical and r.max_abs_diff > 0, r

def test_one_lane_would_miss_a_dependence_on_the_hash_seed(fragile, monkeypatch, two_at_a_time):
    """The negative control of the lanes: with every run forked from one warm interpreter, so one hash seed, 'fresh' calls
    the pipeline that orders its features by a set of strings reproducible. Lanes are what make the check above pass."""
    import fastrepro.verify
    from fastrepro.verify import verify_reproducible
    monkeypatch.setattr(fastrepro.verify, '_FIRSTS', ('run0', 'run1'))  # both runs down lane 0
    r = verify_reproducible(fragile.features_from_a_set, fragile.fit, runs=2, executor=two_at_a_time, warm=True)
    assert r.identical, r

# The checks 'history' and 'workers' fail in fresh processes too, each on a digits pipeline broken on purpose for it
# (`nbs/15_verify.ipynb` shows the same pipelines failing them in this process).
def _digits(num_workers=0, dl_type=None, extra_item_tfms=(), **dl_kwargs):
    from fastai.vision.all import accuracy
    from fastrepro.all import repro_learner, digits_dblock, digits_cnn, digits_path
    db = digits_dblock(augment=False, every=3)  # a third of the digits: the breakage, not learning, is the point
    db.item_tfms = [*db.item_tfms, *extra_item_tfms]
    return repro_learner(db, digits_path(), seed=42, model=digits_cnn, num_workers=num_workers, metrics=accuracy,
                         dl_kwargs=dict(dl_kwargs, **({'dl_type': dl_type} if dl_type else {})))

def _rotating(num_workers=0):
    "A loader whose shuffle keeps state across passes, with no key: it rotates the order one step further each pass."
    from fastai.data.core import TfmdDL
    class RotatingDL(TfmdDL):
        def shuffle_fn(self, idxs):
            self.passes = getattr(self, 'passes', 0) + 1
            return idxs[self.passes:] + idxs[:self.passes]
    return _digits(num_workers, dl_type=RotatingDL)

def _worker_noise(num_workers=0):
    "An item transform that seeds its noise from the worker's id."
    import torch
    from torch.utils.data import get_worker_info
    from fastai.vision.all import Transform, TensorImage
    class WorkerNoise(Transform):
        order = 90
        def encodes(self, x:TensorImage):
            w = get_worker_info()
            return x + torch.rand(x.shape, generator=torch.Generator().manual_seed(w.id + 1 if w else 0))
    return _digits(num_workers, extra_item_tfms=[WorkerNoise()])

@pytest.mark.parametrize('check,make', [('history', _rotating), ('workers', _worker_noise)])
def test_history_and_workers_checks_fail_in_fresh_processes(check, make, two_at_a_time):
    import cloudpickle
    from fastrepro.examples import digits_path
    from fastrepro.verify import verify_reproducible
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the children cannot import this test module
    digits_path()  # write the data once, before the fresh runs race for it
    r = verify_reproducible(make, lambda learn: learn.fit(1, 1e-2), checks=(check,), executor=two_at_a_time, show_progress=False)
    assert r.checks == {check: False} and not r.identical and r.max_abs_diff > 0, r

# fork: Python <= 3.13's default on Linux, the control that must keep passing (a forked worker is a copy of its parent, so
# nothing is pickled for it); spawn: macOS's and Windows' default; forkserver: Linux's from Python 3.14. Under the last two
# every worker receives its loader pickled, and before issue 44 every fit with workers crashed there.
START_METHODS = ('fork', 'spawn', 'forkserver')

def _persistent_digits(num_workers=0):
    """The digits, with `persistent_workers=True` when they have workers (fastai still starts its workers afresh every pass).
    Under forkserver the workers fork from a server that imported fastai once, as Python 3.14 gives a script that imports
    it at its top (its forkserver preloads `__main__`; a fresh run's `python -c` has no main file to preload)."""
    import multiprocessing
    multiprocessing.set_forkserver_preload(['fastai.vision.all', 'fastrepro.learner'])
    return _digits(num_workers, persistent_workers=num_workers > 0)

@pytest.mark.parametrize('method', START_METHODS)
def test_the_workers_check_passes_under_every_start_method(method, two_at_a_time):
    """`verify_reproducible`'s 'workers' check from a process whose start method is `method`: the fresh runs' workers start
    that way too (their manifests say so), and 2 workers give the bits of none."""
    import cloudpickle
    from helpers import start_method
    from fastrepro.examples import digits_path
    from fastrepro.verify import verify_reproducible
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the children cannot import this test module
    digits_path()
    with start_method(method):
        r = verify_reproducible(_persistent_digits, lambda learn: learn.fit(1, 1e-2), checks=('workers',), executor=two_at_a_time, show_progress=False)
    assert r.checks == {'workers': True}, r
    recorded = [(m['hyperparameters']['num_workers'], m['hyperparameters']['worker_start_method']) for run in r.runs for m in run['manifests']]
    assert recorded == [(0, method), (2, method)]

@pytest.mark.slow  # 30+ s of fresh processes: the full suite runs it, the inner loop does not
def test_two_torch_threads_are_reproducible_too():
    "The suite runs one torch thread per process (tools/test.sh); two fresh runs with two threads each agree bitwise too."
    import cloudpickle
    from fastrepro.examples import digits_path
    from fastrepro.verify import CheckReport
    from fastrepro.fresh import fresh_payload, run_fresh
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    digits_path()
    payload = fresh_payload(_digits, lambda learn: learn.fit(1, 1e-2), threads=2)
    a, b = run_fresh(payload), run_fresh(payload)  # one after the other: at once, they would share the two cores
    assert CheckReport([a, b]).identical

# A learner class that reimplements fastai's `Learner` instead of subclassing it (issue 46, point 3): its namespace is
# Learner's as fastai leaves it, copied before fastrepro is imported, so it has no name fastrepro could patch onto Learner.
OWN_LEARNER = """
import json, sys, torch
from fastai.vision.all import Learner  # with the names fastai itself patches onto it (`no_bar`, `fit_one_cycle`, ...)
from fastai.test_utils import synth_dbunch, RegModel
from fastai.losses import MSELossFlat
OwnLearner = type('OwnLearner', Learner.__bases__, {k: v for k, v in vars(Learner).items() if k not in ('__dict__', '__weakref__')})
from fastcore.basics import patch
from fastrepro.all import ReproCallback, last_manifest, load_manifest, hash_state_dict
@patch(as_prop=True)
def patched_later(self:Learner): return 1  # what a callback must not rely on: `OwnLearner` does not have it
assert not isinstance(OwnLearner, Learner) and hasattr(Learner, 'patched_later') and not hasattr(OwnLearner, 'patched_later')
def fit(cls):
    torch.manual_seed(0)  # the same data and initial weights for both classes: ReproCallback keys the fit, not the model
    learn = cls(synth_dbunch(bs=16), RegModel(), loss_func=MSELossFlat())
    with learn.no_bar(), learn.no_logging(): learn.fit(2, 1e-2, cbs=ReproCallback(seed=7))
    return hash_state_dict(learn.model.state_dict()), load_manifest(last_manifest(learn))['status']
print(json.dumps([fit(Learner), fit(OwnLearner)]))
"""

def test_any_learner_fastais_callbacks_accept():
    "`ReproCallback` on a learner class that is not a `Learner`: the same bits and a completed manifest, through no patched name."
    import json, subprocess
    r = subprocess.run([sys.executable, '-c', OWN_LEARNER], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    stock, own = json.loads(r.stdout.strip().splitlines()[-1])
    assert own == stock and own[1] == 'completed'
