"""Fresh children find the user's code (issue 23, point 8), and leave no temporary folder behind (point 9).

A notebook often imports helpers through its own `sys.path` (`sys.path.append('..')`). cloudpickle pickles their functions
by reference, so a fresh child must take on the parent's `sys.path` before it unpickles, as multiprocessing's spawn does.
"""
import os, pickle, signal, subprocess, sys, textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import cloudpickle, pytest
from fastrepro.fresh import fresh_payload, run_fresh, FreshRunError, remove_stale_tempdirs, fresh_tempdir
from fastrepro.files import HOST
from fastrepro.resume import _run_child

pytestmark = pytest.mark.slow  # fresh interpreters: the full suite runs them, the inner loop does not

HELPERS = '''
from fastai.test_utils import synth_learner
from fastrepro.callback import ReproCallback
def make_learner(): return synth_learner(cbs=ReproCallback(seed=5))
def fit(learn): learn.fit(1, 1e-2)
'''

@pytest.fixture
def helpers(tmp_path, monkeypatch):
    "A helpers module the parent finds only through a folder it put on its own `sys.path`, as a notebook does."
    (tmp_path/'mine').mkdir(); (tmp_path/'mine'/'repro_helpers_x.py').write_text(HELPERS)
    monkeypatch.syspath_prepend(str(tmp_path/'mine'))
    monkeypatch.chdir(tmp_path)  # not the folder: only sys.path leads there
    import repro_helpers_x
    yield repro_helpers_x
    sys.modules.pop('repro_helpers_x', None)

def test_fresh_runs_import_what_the_parent_found_through_its_sys_path(helpers, tmp_path):
    "`run_fresh` (verify_reproducible, seed_sweep, find_divergence) and `verify_resume`'s children both import the helpers."
    with ThreadPoolExecutor(2) as pool:
        fresh = pool.submit(run_fresh, fresh_payload(helpers.make_learner, helpers.fit, threads=1))
        resumed = pool.submit(_run_child, helpers.make_learner, helpers.fit, tmp_path/'resume', 'plain')
        r, rr = fresh.result(timeout=600), resumed.result(timeout=600)
    assert r['manifests'][0]['randomness']['seed'] == 5 and len(r['epochs']) == 1
    assert rr['manifests'] and 'model' in rr

def test_a_module_the_child_cannot_import_is_named(helpers):
    "The negative control: the same payload, with the helpers' folder left out of the path the child takes on, fails and says why."
    context, inner = pickle.loads(fresh_payload(helpers.make_learner, helpers.fit, threads=1))
    context['sys_path'] = [p for p in context['sys_path'] if not p.endswith('mine')]
    with pytest.raises(FreshRunError) as e: run_fresh(pickle.dumps((context, inner)))
    assert "cannot import module 'repro_helpers_x'" in e.value.error and 'no file for it' in e.value.error

def test_temp_folders_of_a_killed_parent_are_removed(tmp_path):
    "A parent SIGKILLed while it holds a fresh run's folder leaves it; the next fresh folder on this host removes it, never a live one's."
    code = "import time; from fastrepro.fresh import fresh_tempdir; d = fresh_tempdir(); print(d.name, flush=True); time.sleep(600)"
    parent = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True, env={**os.environ, 'TMPDIR': str(tmp_path)})
    left = Path(parent.stdout.readline().strip())
    assert left.is_dir() and left.name.startswith(f'fastrepro-fresh-{HOST}-{parent.pid}-')
    assert remove_stale_tempdirs(tmp_path) == 0 and left.is_dir()  # its owner still runs
    parent.send_signal(signal.SIGKILL); parent.wait()
    assert left.is_dir()  # nobody could remove it
    assert remove_stale_tempdirs(tmp_path) == 1 and not left.exists()
