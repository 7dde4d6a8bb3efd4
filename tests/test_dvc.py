"""Data versions that come back (issue 38, `nbs/07a_dvc`): each bad input of `reproduce` for a DVC-tracked run is refused in
the preflight, before anything is checked out, with what would fix it; the recorded version found is the negative control.
The end-to-end flow (two versions, diff, a bitwise reproduction, a drill, the exit 2, a DVC stage) is in `nbs/07a_dvc`.

A run is recorded as a fit starts (`start_fit_manifest` of a `repro_learner`): every layer a preflight reads, and no
training. Real git, real `dvc`, a real local remote."""
import os, shutil, subprocess, sys
from pathlib import Path
import pytest
from fastrepro.examples import digits_path, digits_dblock, digits_cnn
from fastrepro.learner import repro_learner
from fastrepro.record import start_fit_manifest
from fastrepro.manifest import finish_manifest, write_manifest, load_manifest
from fastrepro.preflight import preflight
from fastrepro.dvc import data_version

DVC = str(Path(sys.executable).parent/'dvc')
os.environ.setdefault('DVC_NO_ANALYTICS', '1')

def sh(*cmd, cwd): return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout

def commit(repo, msg): sh('git', 'add', '-A', cwd=repo); sh('git', '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', msg, cwd=repo)

def dvc_project(folder:Path) -> Path:
    "A git repository with DVC, 20 digits of each class per split under `data/digits` (`dvc add`), pushed to a local remote."
    repo = folder/'project'; repo.mkdir(parents=True)
    sh('git', 'init', '-q', cwd=repo); sh(DVC, 'init', '-q', cwd=repo)
    for d in sorted(digits_path().glob('*/*')):
        if d.parent.name in ('train', 'valid'):
            (dest := repo/'data'/'digits'/d.parent.name/d.name).mkdir(parents=True)
            for f in sorted(d.iterdir())[:20]: shutil.copy(f, dest)
    sh(DVC, 'add', '-q', 'data/digits', cwd=repo); sh(DVC, 'remote', 'add', '-d', 'store', str(folder/'store'), cwd=repo); sh(DVC, 'push', '-q', cwd=repo)
    (repo/'.gitignore').write_text('runs/\n')
    commit(repo, 'the digits')
    return repo

def record(repo:Path, data, monkeypatch) -> Path:
    "The manifest of a fit on `data`, started in `repo` (no training: what a fit records as it starts), in `repo/runs`."
    monkeypatch.chdir(repo)
    learn = repro_learner(digits_dblock(), data, seed=42, model=digits_cnn, num_workers=0)
    return write_manifest(finish_manifest(start_fit_manifest(learn, 42, runs=repo/'runs')), repo/'runs')

def check(path:Path):
    "The preflight of the code and data layers of the run at `path`."
    return preflight(load_manifest(path), path.parent, layers=('code', 'data'))

def new_version(repo:Path):
    "Twenty images of nines fewer, added as a new version and committed."
    for p in sorted((repo/'data'/'digits'/'train'/'9').iterdir()): p.unlink()
    sh(DVC, 'add', '-q', 'data/digits', cwd=repo); commit(repo, 'no nines')

@pytest.fixture(scope='module', autouse=True)
def dvc_state(tmp_path_factory):
    "DVC's state for these repositories (`DVC_SITE_CACHE_DIR`) in a temporary folder, not in /var/tmp/dvc."
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv('DVC_SITE_CACHE_DIR', str(tmp_path_factory.mktemp('dvc-site'))); yield

@pytest.fixture(scope='module')
def project(tmp_path_factory, dvc_state): return dvc_project(tmp_path_factory.mktemp('dvc'))

@pytest.fixture
def fresh(tmp_path, project):
    "A copy of the module's project (its own cache and remote), to change."
    shutil.copytree(project.parent, tmp_path, dirs_exist_ok=True, symlinks=True)
    sh(DVC, 'remote', 'modify', 'store', 'url', str(tmp_path/'store'), cwd=tmp_path/'project')
    return tmp_path/'project'

def test_the_recorded_version_is_found_and_the_working_data_left_alone(fresh, monkeypatch):
    "The negative control of the tests below: a run on version 1, checked when the data is at version 2, comes back from the cache."
    run = record(fresh, 'data/digits', monkeypatch)
    m = load_manifest(run)
    assert list(m['data']['dvc']['outs']) == ['data/digits'] and m['data']['dvc']['dirty'] == []
    new_version(fresh)
    pf = check(run)
    assert pf.ok and pf.restore == {'data/digits': 'cache'}, str(pf)
    assert any('is at ' in n and 'and stays as it is' in n for n in pf.notes['data']), pf.notes
    assert not (fresh/'data'/'digits'/'train'/'9').exists() or not any((fresh/'data'/'digits'/'train'/'9').iterdir())  # untouched

def test_an_unreachable_remote_is_named(fresh, monkeypatch):
    "The cache lacks the version and the remote's folder is gone (an unplugged drive): exit 2 names the remote, nothing is checked out."
    run = record(fresh, 'data/digits', monkeypatch)
    shutil.rmtree(fresh/'.dvc'/'cache'); shutil.move(fresh.parent/'store', fresh.parent/'unplugged')
    pf = check(run)
    assert not pf.ok and pf.restore is None
    [msg] = pf.problems['data']
    assert f"nor remote 'store' ({fresh.parent/'store'}), which cannot be reached" in msg and 'dvc push data/digits.dvc -r store' in msg, msg

def test_a_version_in_neither_cache_nor_remote_is_named(fresh, monkeypatch):
    "The exit 2 of `nbs/07a_dvc`, with an empty remote: the output, its hash, the remote searched and the `dvc push` that fixes it."
    run = record(fresh, 'data/digits', monkeypatch)
    md5 = load_manifest(run)['data']['dvc']['outs']['data/digits']
    shutil.rmtree(fresh/'.dvc'/'cache'); shutil.rmtree(fresh.parent/'store'); (fresh.parent/'store'/'files'/'md5').mkdir(parents=True)
    [msg] = check(run).problems['data']
    assert msg.startswith(f"data/digits at version {md5} (data/digits.dvc, commit ") and f"nor remote 'store' ({fresh.parent/'store'})" in msg, msg

def test_a_tracking_file_deleted_since_the_run_comes_back_with_the_run(fresh, monkeypatch):
    "A version added but not committed when the run started: its tracking file is stored with the run, so deleted since, it still comes back."
    for p in sorted((fresh/'data'/'digits'/'train'/'9').iterdir()): p.unlink()
    sh(DVC, 'add', '-q', 'data/digits', cwd=fresh)  # no commit: the run stores the changed tracking file with its patch
    run = record(fresh, 'data/digits', monkeypatch)
    assert load_manifest(run)['data']['dvc']['tracking']['data/digits']['commit'] is None
    (fresh/'data'/'digits.dvc').unlink()
    pf = check(run)
    assert pf.ok and pf.restore == {'data/digits': 'cache'}, str(pf)
    assert "data/digits.dvc was deleted from the working tree since the run; the run's tree holds it" in pf.notes['data']

def test_a_tracking_file_git_holds_comes_back_from_the_run_commit(fresh, monkeypatch):
    "The control of the test above: deleted from the working tree, but in the run's commit, the version still comes back."
    run = record(fresh, 'data/digits', monkeypatch)
    sh('git', 'rm', '-q', 'data/digits.dvc', cwd=fresh); commit(fresh, 'no DVC')
    pf = check(run)
    assert pf.ok and pf.restore == {'data/digits': 'cache'}, str(pf)
    assert "data/digits.dvc was deleted from the working tree since the run; the run's tree holds it" in pf.notes['data']

def test_data_outside_the_repository(fresh, tmp_path, monkeypatch):
    "The DVC repository is not the run's: unchanged data reruns as before (a note); changed data fails, and says why it cannot come back."
    code = tmp_path/'code'; code.mkdir()
    sh('git', 'init', '-q', cwd=code); (code/'train.py').write_text('pass\n'); commit(code, 'code')
    run = record(code, fresh/'data'/'digits', monkeypatch)
    pf = check(run)
    assert pf.ok and any("outside the run's repository" in n for n in pf.notes['data']), str(pf)
    new_version(fresh)
    problems = check(run).problems['data']
    assert any(p.startswith('removed: ') for p in problems) and any("outside the run's repository" in p for p in problems), problems

def test_dvc_not_installed(fresh, monkeypatch):
    "Without dvc, a DVC-tracked run is recorded with the install hint instead of its version, and its version cannot be restored."
    run = record(fresh, 'data/digits', monkeypatch)
    monkeypatch.setitem(sys.modules, 'dvc.repo', None)  # what Python does for a package that is not installed: ImportError
    assert "dvc is not installed: pip install 'fastrepro[dvc]'" in data_version(fresh/'data'/'digits')['error']
    [msg] = check(run).problems['data']
    assert msg == "reproduce: the data is in a DVC repository, and dvc is not installed: pip install 'fastrepro[dvc]'", msg

def test_dirty_data_is_checked_as_before(fresh, monkeypatch):
    "Data that matched no DVC version at the run: nothing to restore; the working data is checked as it always was."
    one = next((fresh/'data'/'digits'/'valid'/'0').iterdir()); one.write_bytes(one.read_bytes() + b'\0')
    run = record(fresh, 'data/digits', monkeypatch)
    assert load_manifest(run)['data']['dvc']['dirty'] == ['data/digits']
    pf = check(run)
    assert pf.ok and pf.restore is None and any('no version holds it' in n for n in pf.notes['data']), str(pf)
    one.write_bytes(one.read_bytes()[:-1])
    assert any(p.startswith('changed: ') for p in check(run).problems['data'])

def test_a_stock_learners_items_are_recorded_too(project):
    "No `repro_learner`, so no source: the DVC version is found from the DataLoaders' items (their common folder)."
    from fastai.learner import Learner
    from fastrepro.record import data_fingerprint
    learn = Learner(digits_dblock().dataloaders(project/'data'/'digits', num_workers=0), digits_cnn())
    fp = data_fingerprint(learn)
    assert 'source' not in fp and fp['dvc']['outs'] == data_version(project/'data'/'digits')['outs'], fp.get('dvc')
