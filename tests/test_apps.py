"""The contract on every fastai application in `tests/apps.py`, in fresh processes: history independence and worker
invariance for all of them, each against the plain fit of another fresh process (so fresh-process identity too), history
between two fits for a few, and stock fastai failing the flows fastrepro fixes (the negative controls: the same harness
does see a difference where there is one)."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from apps import APPS, BETWEEN, CONTRAST, STARTS, check_mask_alignment

APPS_PY = Path(__file__).parent/'apps.py'
pytestmark = pytest.mark.slow

def _start(part, tmp):
    # One torch thread (OMP_NUM_THREADS=1, set by conftest.py): the two processes share the two cores, and results
    # depend bitwise on the thread count.
    env = {**os.environ, 'FASTREPRO_RUNS': str(tmp/'runs')}
    return subprocess.Popen([sys.executable, str(APPS_PY), 'matrix', '--part', f'{part}/2'], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)

def _finish(p):
    out, err = p.communicate(timeout=1800)
    assert p.returncode == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])

@pytest.fixture(scope='module')
def parts(tmp_path_factory):
    """The matrix in two fresh processes, side by side: each trains its own apps' flows (2 workers, history cells before
    the fit, ...), and the plain fit of the other's apps."""
    tmp = tmp_path_factory.mktemp('apps')
    procs = [_start(part, tmp) for part in (0, 1)]
    return [_finish(p) for p in procs]

def owner(parts, app) -> dict:
    "The part that trained `app`'s flows."
    return next(p for p in parts if f'{app}/w2' in p)

def plain(parts, app) -> dict:
    "`app`'s plain fit (0 workers, nothing before it), made in the other fresh process than its flows."
    [r] = [p[f'{app}/w0'] for p in parts if f'{app}/w0' in p]
    return r

# Each flow is compared with the plain fit of the *other* fresh process, so each comparison proves fresh-process identity
# too, and every app trains its plain fit once, not twice. When a flow differs, its message says whether the owner's two
# flows agree with each other: if they do, the fresh processes disagree; if not, the flow itself broke.
def _which(parts, app) -> str:
    m = owner(parts, app)
    return ("its part's other flows agree with each other, so fresh-process identity looks broken" if m[f'{app}/w2'] == m[f'{app}/history']
            else "its part's own flows differ too, so this flow broke")

@pytest.mark.parametrize('app', list(APPS))
def test_history_independence(parts, app):
    "A fit after history cells (`one_batch`, `lr_find`, ...) equals the plain fit of another fresh process."
    assert owner(parts, app)[f'{app}/history'] == plain(parts, app), \
        f"{app}: {', '.join(APPS[app].history)} before the fit changed it ({_which(parts, app)})"

@pytest.mark.parametrize('app', list(APPS))
def test_worker_invariance(parts, app):
    "A fit with 2 loader workers equals the plain fit (0 workers) of another fresh process."
    assert owner(parts, app)[f'{app}/w2'] == plain(parts, app), f"{app}: 2 workers trained to other weights than 0 ({_which(parts, app)})"

@pytest.mark.parametrize('app,method', [(a, m) for a, ms in STARTS.items() for m in ms])
def test_worker_invariance_under_other_start_methods(parts, app, method):
    """2 workers started by forkserver (Linux's default from Python 3.14) or spawn (macOS's and Windows') equal the plain fit.
    Each worker then receives its loader pickled; `test_worker_invariance` above, under fork, is the control that must pass too."""
    assert owner(parts, app)[f'{app}/w2:{method}'] == plain(parts, app), f"{app}: 2 workers started by {method} trained to other weights than 0"

@pytest.mark.parametrize('app', BETWEEN)
def test_history_between_two_fits(parts, app):
    m = owner(parts, app)
    assert m[f'{app}/between'] == m[f'{app}/two_fits'], f"{app}: {', '.join(APPS[app].history)} between two fits changed the second"
    assert m[f'{app}/two_fits']['weights'] != plain(parts, app)['weights']  # the second fit did train

def test_every_app_trains_its_own_model(parts):
    "A guard against a harness that ignores its configuration: every app recorded epochs, and no two share weights."
    w0 = {a: plain(parts, a) for a in APPS}
    assert all(r['epochs'] for r in w0.values())
    assert len({r['weights'] for r in w0.values()}) == len(APPS)
    assert len(w0['save_early']['epochs']) == 2  # early stopping ended the 3-epoch fit

@pytest.mark.parametrize('app,variant', [(a, v) for a, vs in CONTRAST.items() for v in vs])
def test_stock_fastai_breaks_the_flow(parts, app, variant):
    "The contrast, and the negative control of this harness: without fastrepro, this cell before the fit (or 2 workers) changes it."
    m = owner(parts, app)
    assert m[f'stock/{app}/{variant}']['weights'] != m[f'stock/{app}/w0']['weights'], variant

def test_segmentation_crops_image_and_mask_together():
    r = check_mask_alignment()
    assert r['aligned'] and r['pixel_agreement'] == [1.0] * len(r['pixel_agreement'])
    assert min(r['random_crops']) > 0 and r['draws_differ']  # the crops really were random
    assert max(r['shifted_agreement']) < 0.97  # a mask one pixel off would be caught
