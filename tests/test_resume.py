"""Exact resume (issue 11): runs killed by a real SIGKILL and resumed in fresh processes end bitwise-equal to uninterrupted ones.

Every check runs `verify_resume`, which trains in fresh processes: the uninterrupted run, then the run killed after a chosen
checkpoint, then its resume. Negative controls resume the same kill again (from a copy of what it left), each leaving one part
of the state out, and must differ.
"""
import signal, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import cloudpickle, pytest
from fastai.vision.all import accuracy, SaveModelCallback, EarlyStoppingCallback
from fastrepro.all import repro_learner, digits_dblock, digits_path, digits_cnn
from fastrepro.resume import verify_resume
from fastrepro.checkpoint import load_checkpoint, parse_checkpoint_name
from fastrepro.files import remove_orphans
sys.path.insert(0, str(Path(__file__).parent))
import apps

pytestmark = pytest.mark.slow
for m in (sys.modules[__name__], apps): cloudpickle.register_pickle_by_value(m)  # the children cannot import these test modules
JOB = Path(__file__).parent/'resume_job.py'

def digits(num_workers=0, every=3):  # a third of the digits (7 batches an epoch): resuming, not learning, is the point
    return repro_learner(digits_dblock(every=every), digits_path(), seed=42, model=digits_cnn, num_workers=num_workers, metrics=accuracy)
def all_digits(num_workers=0): return digits(num_workers, every=1)  # EarlyStoppingCallback needs epochs that learn
def tabular(num_workers=0): return apps.make_tabular(num_workers)  # breast cancer: Categorify, FillMissing, embedding dropout
def grad_accum(num_workers=0): return apps.make_grad_accum(num_workers)  # digits, bs=16, GradientAccumulation(n_acc=64)
def one_cycle(l): l.fit_one_cycle(2, 1e-2)
def tab_cycle(l): l.fit_one_cycle(3, 1e-2)
def fine_tune(l): l.fine_tune(1, 1e-2, freeze_epochs=1)
def tracked(l):
    l.fit_one_cycle(8, 1e-2, cbs=[SaveModelCallback(monitor='accuracy'), EarlyStoppingCallback(monitor='accuracy', min_delta=0.02, patience=1)])

def _identical(r):
    assert r.identical, repr(r)
    assert r.resumed_from, "the resumed run's manifest records no resume"
    return r

# Each scenario is a chain of fresh processes; two chains run at a time, one per core (each child uses one thread).
def _vision():
    """fit_one_cycle on the digits CNN with 2 workers: cuts at an epoch boundary and mid-epoch, and the negative controls
    (leaving out the optimizer's state is `nbs/20_resume.ipynb`'s, with 0 workers)."""
    ref = verify_resume(digits, one_cycle, cut='epoch', num_workers=2)
    mid = verify_resume(digits, one_cycle, cut=4, num_workers=2, reference=ref.reference, controls=('schedule', 'rng'))
    return dict(epoch=ref, mid=mid, **mid.controls)  # the controls resume the same kill again, each without one part

def _tabular():
    r = verify_resume(tabular, tab_cycle, cut='epoch', at=2, num_workers=2)
    return dict(epoch=r, mid=verify_resume(tabular, tab_cycle, cut=5, reference=r.reference, num_workers=2))

def _grad_accum():
    r = verify_resume(grad_accum, one_cycle, cut=6, controls=('callbacks',))
    return dict(mid=r, callbacks=r.controls['callbacks'])

def _fine_tune():
    r = verify_resume(digits, fine_tune, cut=2, at=(2, 3))  # inside the frozen fit, then resumed, killed again in the second
    return dict(twice=r, second=verify_resume(digits, fine_tune, cut='epoch', at=2, reference=r.reference))  # the second fit's epoch end

def _trackers():
    r = verify_resume(all_digits, tracked, cut='epoch', at=2, controls=('callbacks',))
    return dict(epoch=r, callbacks=r.controls['callbacks'])

SCENARIOS = dict(vision=_vision, tabular=_tabular, grad_accum=_grad_accum, fine_tune=_fine_tune, trackers=_trackers)

@pytest.fixture(scope='module')
def runs():
    digits_path()  # write the data once, before processes race for it
    pool = ThreadPoolExecutor(2)
    futures = {name: pool.submit(f) for name, f in SCENARIOS.items()}
    yield futures
    pool.shutdown(cancel_futures=True)

def test_vision_epoch_and_mid_epoch_cuts(runs):
    r = runs['vision'].result()
    assert [(p['fit'], p['epoch'], p['batch']) for p in _identical(r['epoch']).resumed_from] == [(0, 1, 0)]
    assert [(p['epoch'], p['batch']) for p in _identical(r['mid']).resumed_from] == [(0, 4)]
    m = r['mid'].resumed['manifests']
    assert len(m) == 1 and m[0]['status'] == 'completed'  # one run id across the interruption
    assert (0, 4) in {c[1:] for a in m[0]['artifacts'] if (c := parse_checkpoint_name(a['path']))}

def test_negative_controls(runs):
    "A resume that leaves out the schedule's position or the keyed streams must differ."
    r = runs['vision'].result()
    for omit in ('schedule', 'rng'): assert not r[omit].identical, f"leaving out {omit} changed nothing: the check cannot fail"
    assert r['rng'].difference[0].startswith('metrics.fit0.epoch0.'), r['rng'].difference  # it names where

def test_tabular(runs):
    for r in runs['tabular'].result().values(): _identical(r)

def test_gradient_accumulation_count(runs):
    "Cut after batch 6 of 16 items, half-way through an accumulation of 64: the count and the gradients must come back."
    r = runs['grad_accum'].result()
    _identical(r['mid'])
    assert not r['callbacks'].identical

def test_fine_tune_cut_in_each_fit_and_killed_twice(runs):
    r = runs['fine_tune'].result()
    assert [(p['fit'], p['batch']) for p in _identical(r['twice']).resumed_from] == [(0, 4), (1, 4)]
    assert len(r['twice'].resumed['manifests']) == 2  # each of fine_tune's two fits, under one run id each
    assert [p['fit'] for p in _identical(r['second']).resumed_from] == [1]

def test_trackers_stop_at_the_same_epoch_and_reload_the_same_best(runs):
    r = runs['trackers'].result()
    m = _identical(r['epoch']).reference['manifests'][0]
    assert m['status'] == 'completed' and m['stopped_early']['by'] == 'EarlyStoppingCallback' and len(m['results']['epochs']) < 8  # it did stop
    assert not r['callbacks'].identical  # without the trackers' best and wait, it saves and stops differently

def _stock(d, mode):
    r = subprocess.run([sys.executable, str(JOB), 'stock', str(d), mode], capture_output=True, text=True, timeout=600)
    assert r.returncode == (-signal.SIGKILL if mode == 'cut' else 0), r.stderr[-2000:]
    return r.stdout.strip()

def test_stock_fastai_resume_differs(tmp_path):
    "The contrast: stock fastai is repeatable from scratch, but `learn.load` plus `fit_one_cycle(start_epoch=1)` ends elsewhere."
    full, again = _stock(tmp_path/'full', 'full').split()  # two seeded fits from scratch, one after the other
    _stock(tmp_path, 'cut')
    assert full == again and _stock(tmp_path, 'resume') != full

def test_killed_checkpoint_write_leaves_the_previous_one_loadable(tmp_path):
    p = subprocess.Popen([sys.executable, str(JOB), 'writer', str(tmp_path)], stderr=subprocess.PIPE)
    models, t0, killed_mid_write = tmp_path/'models', time.time(), False
    try:
        while time.time() - t0 < 300 and p.poll() is None:
            done = list(models.glob('*.pth')) if models.is_dir() else []
            if len(done) >= 2 and list(models.glob('.tmp-*.part')):
                p.send_signal(signal.SIGKILL); killed_mid_write = True; break
            time.sleep(0.005)
    finally:
        if p.poll() is None: p.kill()
        p.wait()
    assert killed_mid_write, p.stderr.read()[-2000:]
    assert list(models.glob("*.pth"))
    for f in models.glob("*.pth"): load_checkpoint(f)  # every complete checkpoint loads
    assert remove_orphans(models) <= 1 and not list(models.glob('.tmp-*'))  # the dead writer's temp file is cleaned up
