"""The contract on every fastai application in `tests/apps.py`: history independence and worker invariance for all of
them, fresh-process identity for a representative few, and stock fastai failing the two flows fastrepro fixes."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from apps import APPS, CONTRAST, check_mask_alignment

APPS_PY = Path(__file__).parent/'apps.py'
FRESH = ('vision_lr_find_fine_tune', 'segmentation', 'text_lm', 'text_classifier', 'tabular', 'plain_torch')
pytestmark = pytest.mark.slow

def _start(args, tmp):
    # One torch thread: two of these processes share the two cores, and results depend bitwise on the thread count.
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'FASTREPRO_RUNS': str(tmp/'runs')}
    return subprocess.Popen([sys.executable, str(APPS_PY), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

def _finish(p):
    out, err = p.communicate(timeout=1800)
    assert p.returncode == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])

@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    "The matrix in one fresh process and the plain runs of `FRESH` in another, side by side."
    tmp = tmp_path_factory.mktemp('apps')
    procs = [_start(['matrix'], tmp), _start(list(FRESH), tmp)]
    return [_finish(p) for p in procs]

@pytest.mark.parametrize('app', list(APPS))
def test_history_independence(runs, app):
    m = runs[0]
    assert m[f'{app}/history'] == m[f'{app}/w0'], f"{app}: {', '.join(APPS[app].history)} before the fit changed it"

@pytest.mark.parametrize('app', list(APPS))
def test_worker_invariance(runs, app):
    m = runs[0]
    assert m[f'{app}/w2'] == m[f'{app}/w0'], f"{app}: 2 workers trained to other weights than 0"

@pytest.mark.parametrize('app', FRESH)
def test_fresh_process_identity(runs, app):
    assert runs[1][app] == runs[0][f'{app}/w0']

def test_every_app_trains_its_own_model(runs):
    "A guard against a harness that ignores its configuration: every app recorded epochs, and no two share weights."
    m = runs[0]
    assert all(m[f'{a}/w0']['epochs'] for a in APPS)
    assert len({m[f'{a}/w0']['weights'] for a in APPS}) == len(APPS)
    assert len(m['save_early/w0']['epochs']) == 2  # early stopping ended the 3-epoch fit

@pytest.mark.parametrize('app', list(CONTRAST))
def test_stock_fastai_breaks_the_flow(runs, app):
    "The contrast, and the negative control of this harness: without fastrepro, these cells before the fit change it."
    m = runs[0]
    for cell in CONTRAST[app]: assert m[f'stock/{app}/{cell}']['weights'] != m[f'stock/{app}/w0']['weights'], cell

def test_segmentation_crops_image_and_mask_together():
    r = check_mask_alignment()
    assert r['aligned'] and r['pixel_agreement'] == [1.0] * len(r['pixel_agreement'])
    assert min(r['random_crops']) > 0 and r['draws_differ']  # the crops really were random
    assert max(r['shifted_agreement']) < 0.97  # a mask one pixel off would be caught
