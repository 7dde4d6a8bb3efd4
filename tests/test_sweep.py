"""Seed sweeps: each seed's result is that of a single fresh run of the seed, whatever the executor or concurrency; varying
every purpose is an ordinary sweep; resume after SIGKILL; verify_reproducible on a Dask cluster."""
import os, signal, subprocess, sys, textwrap, time
from functools import partial
from pathlib import Path
import cloudpickle, pytest, torch
from fastai.vision.all import accuracy
from fastrepro.all import *
from fastrepro.seed import PURPOSES
from fastrepro.fresh import fresh_payload, run_fresh
from fastrepro.fingerprint import hash_state_dict
from fastrepro.manifest import load_manifest
from helpers import start_method

pytestmark = pytest.mark.slow
SEEDS = range(3)

def _digits(seed):
    return repro_learner(digits_dblock(every=3), digits_path(), seed=seed, model=digits_cnn, num_workers=0, metrics=accuracy)  # a third: bits, not learning

def _fit(learn): learn.fit(1, 1e-2)

# the children cannot import this test module; single runs train with the sweep's one thread (OMP_NUM_THREADS=1: conftest.py)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

@pytest.fixture(scope='module')
def one(tmp_path_factory):
    "3 seeds, two at a time (the default executor: local fresh processes), from a process whose start method is spawn."
    with start_method('spawn'):
        return seed_sweep(_digits, _fit, seeds=SEEDS, max_workers=2, name='one', runs=tmp_path_factory.mktemp('runs'),
                          show_progress=False)

def test_sweep_results_are_single_fresh_runs_whatever_the_concurrency(one):
    "Each seed of a sweep run two at a time is the seed trained alone; the Dask test below adds another executor."
    assert one.completed == list(SEEDS)
    single = run_fresh(fresh_payload(partial(_digits, 1), _fit))  # one seed trained alone, outside any sweep
    assert hash_state_dict(single['state']) == one.runs[1]['weights_sha256'] and single['epochs'] == one.runs[1]['epochs']
    assert len({one.runs[s]['weights_sha256'] for s in SEEDS}) == len(SEEDS)  # negative control: the seeds do differ

def test_a_sweeps_runs_take_on_the_callers_start_method(one):
    "The sweep above ran from a process that set spawn: each seed's run would start its loader workers by spawn too."
    assert [load_manifest(one.runs[s]['manifests'][0])['hyperparameters']['worker_start_method'] for s in SEEDS] == ['spawn'] * len(SEEDS)

@pytest.fixture(scope='module')
def dask_executor():
    """A real Dask cluster: a scheduler and one worker process, with two threads so two seeds run at once (each in a fresh
    interpreter of its own; a second worker process would only add the import of fastrepro); its dashboard on a free port
    (None still tries 8787)."""
    distributed = pytest.importorskip('distributed')
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=':0') as cluster, \
         distributed.Client(cluster) as client:
        yield client.get_executor()

def test_a_dask_cluster_gives_the_same_results(one, dask_executor, tmp_path):
    seeds = [0, 1]  # two of `one`'s seeds: a sweep needs two
    dask = seed_sweep(_digits, _fit, seeds=seeds, executor=dask_executor, name='dask', runs=tmp_path, show_progress=False)
    assert dask.completed == seeds
    for s in seeds: assert dask.runs[s]['weights_sha256'] == one.runs[s]['weights_sha256'], s
    assert len(list((tmp_path).glob('*.json'))) == len(seeds)  # the manifests came back in the results; the caller wrote them

def test_verify_reproducible_on_a_dask_cluster_compares_the_environments(dask_executor, tmp_path, monkeypatch):
    monkeypatch.setenv('FASTREPRO_RUNS', str(tmp_path))
    report = verify_reproducible(partial(_digits, 0), _fit, executor=dask_executor, show_progress=False)
    assert report.identical and report.environment_diff == []
    assert len(list(tmp_path.glob('*.json'))) == 2  # written here, from the results: the workers share no folder with us
    entropic = verify_reproducible(_entropic, _fit, executor=dask_executor, show_progress=False)
    assert not entropic.identical  # negative control: the cluster really ran two runs (Dask would merge identical calls)

def _entropic():
    "The digits learner with OS entropy in its last layer: no seed reproduces it."
    learn = _digits(0)
    noise = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), 'little'))
    with torch.no_grad(): learn.model[-1].bias.add_(torch.randn(learn.model[-1].bias.shape, generator=noise) * 0.01)
    return learn

def test_varying_every_purpose_is_an_ordinary_sweep(one, tmp_path):
    every = seed_sweep(_digits, _fit, seeds=[0, 1], vary=PURPOSES, base_seed=7, max_workers=2, name='every', runs=tmp_path,
                       show_progress=False)
    for s in (0, 1): assert every.runs[s]['weights_sha256'] == one.runs[s]['weights_sha256'], s
    model = seed_sweep(_digits, _fit, seeds=[0, 1], vary=('model',), base_seed=7, max_workers=2, name='model', runs=tmp_path,
                       show_progress=False)
    for s in (0, 1): assert model.runs[s]['weights_sha256'] != one.runs[s]['weights_sha256'], s  # negative control
    assert model.runs[0]['weights_sha256'] != model.runs[1]['weights_sha256']
    m = load_manifest(model.runs[1]['manifests'][0])
    assert (m['randomness']['seed'], m['randomness']['purpose_seeds']) == (7, {'model': 1})

_PARENT = '''
import sys, cloudpickle
from fastrepro.sweep import seed_sweep
make, fit = cloudpickle.loads(open(sys.argv[1], 'rb').read())
seed_sweep(make, fit, seeds=range(int(sys.argv[3])), max_workers=1, name='killed', runs=sys.argv[2], show_progress=False)
'''

def test_a_killed_sweep_resumes_without_rerunning_completed_seeds(tmp_path):
    payload = tmp_path/'payload.pkl'; payload.write_bytes(cloudpickle.dumps((_digits, _fit)))
    parent = subprocess.Popen([sys.executable, '-c', _PARENT, str(payload), str(tmp_path), str(len(SEEDS))], start_new_session=True)
    saved = tmp_path/'sweeps'/'killed'/'sweep.json'
    deadline = time.time() + 300
    while time.time() < deadline and not (saved.exists() and len(load_sweep(saved).completed) >= 1): time.sleep(0.5)
    os.killpg(parent.pid, signal.SIGKILL); parent.wait()  # the parent and the seed it was running
    before = load_sweep(saved)
    assert 1 <= len(before.completed) < len(SEEDS), before
    after = seed_sweep(_digits, _fit, seeds=SEEDS, max_workers=2, name='killed', runs=tmp_path, resume=True,
                       show_progress=False)
    assert after.completed == list(SEEDS)
    for s in before.completed: assert after.runs[s] == before.runs[s]  # kept, not rerun
    with pytest.raises(ValueError, match='resume=True'):
        seed_sweep(_digits, _fit, seeds=SEEDS, name='killed', runs=tmp_path)
