"The reproducibility contract, checked in fresh Python processes on the bundled digits and a tabular set."
import json, os, subprocess, sys
from pathlib import Path
import pytest

JOB = Path(__file__).parent/'job.py'

def _start(suite):
    return subprocess.Popen([sys.executable, str(JOB), suite], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

def _finish(p):
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])

@pytest.fixture(scope='module')
def runs():
    "Two fresh processes of the identity suite and one of the history suite, run side by side."
    from fastrepro.examples import digits_path
    digits_path()  # write the data once, before the processes race for it
    procs = [_start('identity'), _start('identity'), _start('history')]
    return [_finish(p) for p in procs]

def test_fresh_process_identity(runs):
    a, b, _ = runs
    assert set(a) == set(b) and len(a) == 8
    for name in a:
        assert a[name] == b[name], name
        assert a[name]['epochs'], name

def test_it_learns(runs):
    acc = runs[0]['fit_one_cycle/w0']['epochs'][-1][-1]
    assert acc > 0.5, acc  # chance is 0.1

def test_worker_invariance(runs):
    a = runs[0]
    for m in ('fit', 'fit_one_cycle', 'fine_tune'): assert a[f'{m}/w0'] == a[f'{m}/w2'], m
    assert runs[2]['repro/base/w2'] == runs[2]['repro/base']

def test_identity_suite_distinguishes_methods(runs):
    "A guard against a job that ignores its configuration: different fits give different weights."
    ws = {runs[0][f'{m}/w0']['weights'] for m in ('fit', 'fit_one_cycle', 'fine_tune')}
    assert len(ws) == 3

@pytest.mark.parametrize('cell', ['one_batch', 'show_batch', 'lr_find', 'summary', 'validate', 'get_preds'])
def test_history_independence(runs, cell):
    h = runs[2]
    assert h[f'repro/before/{cell}'] == h['repro/base'], f'{cell} before the fit'
    assert h[f'repro/between/{cell}'] == h['repro/two_fits'], f'{cell} between two fits'

def test_stock_fastai_breaks_history_and_workers(runs):
    "The contrast: on the same pipeline, stock fastai depends on history and on num_workers."
    h = runs[2]
    assert h['stock/before/lr_find']['weights'] != h['stock/base']['weights']
    assert h['stock/before/one_batch']['weights'] != h['stock/base']['weights']
    assert h['stock/base/w2']['weights'] != h['stock/base']['weights']

def _tabular(entropy):
    import torch
    from fastrepro.all import wine_learner
    learn = wine_learner(seed=1, layers=(16,))
    if entropy:
        g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), 'little'))
        with torch.no_grad():
            for p in learn.model.parameters(): p.add_(torch.randn(p.shape, generator=g) * 1e-3)
    return learn

def test_verify_reproducible_fresh_processes():
    import cloudpickle
    from fastrepro.verify import verify_reproducible
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the children cannot import this test module
    fit = lambda learn: learn.fit_one_cycle(2, 1e-2)
    clean = verify_reproducible(lambda: _tabular(False), fit, runs=2)
    assert clean.identical and clean.max_abs_diff == 0 and clean.first_diff_epoch is None
    noisy = verify_reproducible(lambda: _tabular(True), fit, runs=2)
    assert not noisy.identical and noisy.max_abs_diff > 0 and noisy.first_diff_epoch == 0

# Pipelines for `verify_reproducible`'s checks: one clean, and one broken on purpose for each of 'history' and 'workers'.
def _digits(num_workers=0, dl_type=None, extra_item_tfms=()):
    from fastai.vision.all import accuracy
    from fastrepro.all import repro_learner, digits_dblock, digits_cnn, digits_path
    db = digits_dblock()
    db.item_tfms = [*db.item_tfms, *extra_item_tfms]
    return repro_learner(db, digits_path(), seed=42, model=digits_cnn, num_workers=num_workers, metrics=accuracy,
                         dl_kwargs=dict(dl_type=dl_type) if dl_type else None)

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

@pytest.mark.slow
def test_verify_reproducible_checks_in_fresh_processes():
    import cloudpickle
    from fastrepro.verify import verify_reproducible, CHECKS
    from fastrepro.examples import digits_path
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    digits_path()
    fit = lambda learn: learn.fit(1, 1e-2)
    clean = verify_reproducible(_digits, fit, checks=CHECKS, show_progress=False)
    assert clean.checks == {'fresh': True, 'history': True, 'workers': True} and clean.identical
    rot = verify_reproducible(_rotating, fit, checks=('history',), show_progress=False)
    assert rot.checks == {'history': False} and not rot.identical and rot.max_abs_diff > 0
    wn = verify_reproducible(_worker_noise, fit, checks=('workers',), show_progress=False)
    assert wn.checks == {'workers': False} and not wn.identical and wn.first_diff_epoch == 0
