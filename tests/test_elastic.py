"""The elastic mode (issue 25): real launches on 1 process (plain Python, no torchrun), 2 and 4 (`torchrun` over gloo), at
one global batch of 64 in 4 shards, of the digits CNN (BatchNorm, dropout, random crops and `aug_transforms`, through
`repro_learner(shards=4)`) and of a stock `tabular_learner` (BatchNorm1d, embedding dropout, through
`ReproCallback(shards=4)`): the same weights, buffers, optimizer state and metrics after every epoch. The negative
control, the digits with the mode off, trains in the same launches of 1 and 2 processes, and differs.

The same launches checkpoint the digits (`ReproCheckpoint`: every 3 batches on 1 and 4 processes, every epoch on 2), and
three resumes take them to another number of processes, up and down, inside an epoch and at its end: each ends with the
bits of the uninterrupted run. The resume on 2 processes is a launch, whose loaders have 2 workers each, started by forkserver
(Linux's default from Python 3.14: each worker receives its loader pickled, the elastic mode's sharded streams included); those
on one process, and the refused one, run in the test's own process (a plain process, as the launch of 1 is).
"""
import pytest
from pathlib import Path
from helpers import launch
from fastrepro.checkpoint import parse_checkpoint_name
from fastrepro.manifest import load_manifest
from fastrepro.diff import diff_manifests

pytestmark = pytest.mark.slow
JOB = Path(__file__).with_name('elastic_job.py')
APPS = ('digits', 'tabular')

def _ok(res):
    p, ranks, _ = res
    assert p.returncode == 0 and all(r and not any('error' in v for v in r.values() if isinstance(v, dict)) for r in ranks), (p.stderr[-3000:], ranks)
    return ranks

@pytest.fixture(scope='module')
def worlds(tmp_path_factory):
    "Rank results by world size; the launches of 1 and 2 processes also train the digits with the mode off."
    d = tmp_path_factory.mktemp('elastic')
    with_off = ','.join(APPS) + ',digits:off'
    out = {1: _ok(launch(JOB, d, 'w1', '--apps', with_off, '--ckpt-every', '3', nproc=1)),
           2: _ok(launch(JOB, d, 'w2', '--apps', with_off, '--ckpt-every', 'epoch')),
           4: _ok(launch(JOB, d, 'w4', '--apps', ','.join(APPS), '--ckpt-every', '3', nproc=4))}
    return {**out, 'folder': d}

def _result(r): return dict(epochs=r['epochs'], values=r['values'])

@pytest.mark.parametrize('app', APPS)
def test_the_same_bits_on_1_2_and_4_processes(worlds, app):
    "Weights, buffers and optimizer state after each epoch, and each epoch's metrics: equal on every rank of every world size."
    ref = _result(worlds[1][0][app])
    assert len(ref['epochs']) == 2
    for w in (1, 2, 4):
        for r in worlds[w]: assert _result(r[app]) == ref, f"{app}: rank {r['rank']} of {w} differs from one process"

def test_the_mode_off_differs_across_processes(worlds):
    "The negative control: without the mode, 1 and 2 processes at the same global batch train to other weights."
    one, two = worlds[1][0]['digits:off'], worlds[2][0]['digits:off']
    assert one['epochs'][0]['weights'] != two['epochs'][0]['weights'] and one['values'] != two['values']
    assert one['elastic'] is None

@pytest.mark.parametrize('app', APPS)
def test_the_manifest_records_the_mode_and_diff_calls_the_topology_harmless(worlds, app):
    for w in (1, 2, 4):
        assert worlds[w][0][app]['elastic'] == dict(shards=4, shard_size=16, threads=1, world_size=w)
    one, two, four = (load_manifest(worlds[w][0][app]['manifest']) for w in (1, 2, 4))
    for a, b in ((two, four), (one, four)):  # torchrun against torchrun, and a plain process against torchrun
        d = diff_manifests(a, b)
        assert d.matters == [] and 'bitwise identical by design' in str(d), str(d)
    assert 'hardware.topology.world_size' in [f for _, f, *_ in diff_manifests(two, four, include_no_effect=True)]
    # negative control: without the mode, another number of processes is a cause
    off = diff_manifests(*(load_manifest(worlds[w][0]['digits:off']['manifest']) for w in (1, 2)))
    assert 'hardware.topology.world_size' in [f for _, f, *_ in off.causes] and not off.notes

def _checkpoint(worlds, w:int, epoch:int, batch:int) -> Path:
    "The digits' checkpoint at (`epoch`, `batch`) of the launch of `w` processes (rank 0 writes them all)."
    found = [f for f in (worlds['folder']/f'w{w}-digits'/'models').glob('*.pth') if (c := parse_checkpoint_name(f)) and c[1:] == (epoch, batch)]
    assert len(found) == 1, sorted(f.name for f in (worlds['folder']/f'w{w}-digits'/'models').glob('*'))
    return found[0]

def _resume_here(ck:Path, out:Path, monkeypatch, shards:int=4) -> dict:
    "Resume the digits from `ck` in this process, a plain one: what `elastic_job.py` does on one process, without a fresh interpreter."
    import elastic_job
    monkeypatch.setenv('FASTREPRO_RUNS', str(out/'runs'))
    return elastic_job.run_app('digits', str(out/'resume'), 1, shards=shards, resume=str(ck))

@pytest.mark.parametrize('taken,resumed,at', [(1, 2, (0, 3)), (4, 1, (1, 2)), (2, 1, (1, 0))],
                         ids=['1-to-2-mid-epoch', '4-to-1-mid-epoch', '2-to-1-epoch-end'])
def test_a_checkpoint_resumes_on_another_number_of_processes(worlds, taken, resumed, at, tmp_path, monkeypatch):
    """Resumed on `resumed` processes from the checkpoint the launch of `taken` took at `at`: the uninterrupted run's bits.
    On one process the resume runs in this test's own process, after whatever it ran before: keyed streams make that history
    irrelevant too."""
    ck = _checkpoint(worlds, taken, *at)
    if resumed == 1: ranks = [dict(rank=0, digits=_resume_here(ck, tmp_path, monkeypatch))]
    else:
        ranks = _ok(launch(JOB, worlds['folder'], f'resume-{taken}-{resumed}', '--apps', 'digits', '--resume', str(ck),
                           '--workers', '2', '--start-method', 'forkserver', nproc=resumed))
        assert [r['digits']['workers'] for r in ranks] == [[2, 'forkserver']] * resumed
    ref, trained = worlds[1][0]['digits'], at[0]  # epochs before the checkpoint's are not trained again
    for r in ranks:
        assert 'error' not in r['digits'], r['digits']['error']
        assert r['digits']['epochs'] == ref['epochs'][trained:] and r['digits']['values'] == ref['values'], (taken, resumed, at)

def test_a_resume_outside_the_mode_is_refused(worlds, tmp_path, monkeypatch):
    "The negative control: the same checkpoint resumed on one process with the mode off is refused before it trains (its topology)."
    error = _resume_here(_checkpoint(worlds, 4, 1, 2), tmp_path, monkeypatch, shards=0).get('error', '')
    assert 'topology: the checkpoint' in error and 'shards=None' in error, error
