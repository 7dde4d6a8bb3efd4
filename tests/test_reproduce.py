"""Reproduce a run from its record (issue 24), for the entries `nbs/25_reproduce.ipynb` does not run: a notebook executed
by a real Jupyter kernel (nbclient + ipykernel), as a user runs one, and `python -m` with a package of the repository.
Real git repositories in temporary folders, real processes."""
import hashlib, json, os, platform, re, subprocess, sys, time, tomllib
from pathlib import Path
import pytest
from fastrepro.examples import digits_path
from fastrepro.manifest import load_manifest
from fastrepro.capture import package_sources
from fastrepro.reproduce import reproduce
from fastrepro.lock import lock_run, locked_python, _uv
from fastrepro.warm import warm_wanted
from helpers import git, start_method

WARM = 'warm' if warm_wanted() else 'cold (warm=False or FASTREPRO_WARM=0)'  # how reruns start in this suite

pytestmark = pytest.mark.slow

CELLS = ["from fastai.vision.all import accuracy\nfrom fastrepro.all import repro_learner, digits_dblock, digits_cnn",
         "learn = repro_learner(digits_dblock(), DATA, seed=3, model=digits_cnn, num_workers=0, metrics=accuracy)",
         "learn.fit_one_cycle(1, 1e-2)"]

@pytest.fixture(scope='module')
def repo(tmp_path_factory):
    "A repository with a training notebook and a package with a `__main__`, committed; the digits in a folder of its own."
    tmp = tmp_path_factory.mktemp('reproduce')
    data, repo = digits_path(tmp/'digits'), tmp/'repo'
    for i, png in enumerate(sorted(data.rglob('*.png'))):
        if i % 3: png.unlink()  # a third of the digits: each training three times shorter
    cells = [c.replace('DATA', repr(str(data))) for c in CELLS]
    nb = dict(cells=[dict(cell_type='code', id=f'c{i}', metadata={}, outputs=[], execution_count=None, source=c) for i, c in enumerate(cells)],
              metadata=dict(kernelspec=dict(name='python3', display_name='Python 3', language='python')), nbformat=4, nbformat_minor=5)
    (repo/'nbs').mkdir(parents=True); (repo/'nbs'/'train.ipynb').write_text(json.dumps(nb))
    (repo/'pkg').mkdir(); (repo/'pkg'/'__init__.py').write_text('')
    (repo/'pkg'/'__main__.py').write_text('import sys\n' + '\n'.join(cells).replace('fit_one_cycle(1', 'fit_one_cycle(int(sys.argv[1])'))
    git(repo, 'init', '-q'); git(repo, 'add', '.'); git(repo, 'commit', '-qm', 'a notebook and a package')
    return repo

def test_a_notebook_run_in_a_jupyter_kernel_reproduces_bitwise(repo, monkeypatch):
    from nbclient import NotebookClient
    import nbformat
    path = repo/'nbs'/'train.ipynb'
    monkeypatch.setenv('JPY_SESSION_NAME', str(path))  # what Jupyter's server gives its kernels
    monkeypatch.setenv('FASTREPRO_RUNS', str(repo.parent/'runs'))
    monkeypatch.delenv('PYTEST_CURRENT_TEST', raising=False)
    NotebookClient(nbformat.read(path, as_version=4), kernel_name='python3', resources=dict(metadata=dict(path=str(path.parent)))).execute()
    [record] = (repo.parent/'runs').glob('*.json')
    e = load_manifest(record)['code']['entry']
    assert (e['kind'], e['path'], e['cwd'], e['cells'], e['in_order']) == ('notebook', 'nbs/train.ipynb', 'nbs', [0, 1, 2], True)
    r = reproduce(record)
    assert (r.verdict, r.exit_code) == ('bitwise', 0), r
    assert r.new['code']['entry']['kind'] == 'notebook'  # the rerun ran the notebook, as a notebook
    assert r.started == WARM and r.new['process']['started'] == WARM[:4]  # forked from a warm interpreter (fastrepro.warm)

@pytest.fixture(scope='module')
def module_record(repo) -> Path:
    "`python -m pkg 2` run in the repository, as a user runs it: the manifest of its fit."
    runs = repo.parent/'runs-m'
    env = {k: v for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'}
    subprocess.run([sys.executable, '-m', 'pkg', '2'], cwd=repo, env=dict(env, FASTREPRO_RUNS=str(runs)), check=True, capture_output=True)
    [record] = runs.glob('*.json')
    return record

def test_a_module_run_reproduces_bitwise_and_a_short_drill_compares_its_epochs(module_record):
    record = module_record
    assert load_manifest(record)['code']['entry'] == dict(kind='module', replayable=True, module='pkg', argv=['2'], cwd='.')
    with start_method('spawn'): r = reproduce(record, epochs=1)  # from a process that starts its own workers by spawn: no matter
    assert (r.verdict, r.fit['reason']) == ('bitwise', "the first 1 epochs' metrics are equal (weights not compared)"), r
    assert r.new['stopped_early']['by'] == 'fastrepro reproduce --epochs' and len(r.new['results']['epochs']) == 1
    assert r.started == WARM and r.new['code']['entry'] == load_manifest(record)['code']['entry']  # `python -m`, as recorded

def _sha256(p): return hashlib.sha256(Path(p).read_bytes()).hexdigest()

def test_the_lock_rebuilds_the_environment_and_the_run_reproduces_in_its_venv(module_record, tmp_path, monkeypatch, capsys):
    "`lock`, then a real venv built by uv from it, then `bitwise` inside that venv; the recipes parse."
    if package_sources()['fastrepro'].get('dirty'):
        pytest.skip("fastrepro's own checkout has uncommitted changes, and lock refuses a checkout whose changes the run did not record (nbs/24_lock); commit, or run from a clean clone as .ci/run does")
    out = lock_run(module_record, tmp_path/'lock')
    req = (out/'requirements.lock.txt').read_text()
    [wheel] = (out/'wheels').glob('fastrepro-*.whl')
    assert re.search(r'^torch==\S+ \\\n    --hash=sha256:[0-9a-f]{64}', req, re.M) and f"./wheels/{wheel.name} \\\n    --hash=sha256:{_sha256(wheel)}" in req
    assert {'torch', 'fastai', 'fastrepro'} <= {p['name'] for p in tomllib.loads((out/'pylock.toml').read_text())['packages']}
    assert (out/'.python-version').read_text().strip() == platform.python_version()
    from dockerfile_parse import DockerfileParser
    from spython.main.parse.parsers import SingularityParser
    d = DockerfileParser(str(out/'Dockerfile'))
    assert d.baseimage == f"python:{platform.python_version()}-slim" and json.loads(d.cmd) [:2] == ['fastrepro', 'reproduce']
    recipe = SingularityParser(str(out/'apptainer.def')).recipe['spython-base']
    assert recipe.fromHeader == d.baseimage and len(recipe.files) == 5 and any('--require-hashes' in step for step in recipe.install)
    assert 'exec fastrepro reproduce record/' in (out/'apptainer.def').read_text().split('%runscript')[1]  # spython turns a long runscript into its own script
    monkeypatch.setenv('FASTREPRO_CACHE', str(tmp_path/'cache'))  # the venv cache: this build is cold for fastrepro (uv's own cache is warm)
    t0 = time.perf_counter(); r = reproduce(module_record, env='locked', lock=out); cold = time.perf_counter() - t0
    assert (r.verdict, r.exit_code) == ('bitwise', 0), r
    assert 'archive' in r.new['environment']['package_sources']['fastrepro']  # the rerun ran in the venv, on the wheel the lock built
    assert r.started.startswith('cold (another Python, ' if warm_wanted() else 'cold (warm=False')  # a warm interpreter is this environment's: the venv's starts cold
    t0 = time.perf_counter(); py = locked_python(out); warm = time.perf_counter() - t0
    # pylock.toml describes exactly the venv the lock built: uv would change nothing; without one of its packages, it would
    sync = lambda f: subprocess.run([*_uv(), 'pip', 'sync', '--dry-run', '--preview-features', 'pylock', '--python', str(py), f.name], cwd=out, capture_output=True, text=True)
    r_same = sync(out/'pylock.toml')
    assert r_same.returncode == 0 and 'Would make no changes' in r_same.stderr, r_same.stderr
    blocks = (out/'pylock.toml').read_text().split('\n[[packages]]\n')
    (out/'pylock.fewer.toml').write_text('\n[[packages]]\n'.join(b for b in blocks if not b.startswith('name = "six"\n')))
    r_fewer = sync(out/'pylock.fewer.toml')
    assert r_fewer.returncode == 0 and 'Would uninstall 1 package' in r_fewer.stderr and '- six==' in r_fewer.stderr, r_fewer.stderr
    with capsys.disabled(): print(f"\nlocked venv: reproduce with env='locked' took {cold:.1f} s (venv build included), a second locked_python {warm * 1e3:.0f} ms")
