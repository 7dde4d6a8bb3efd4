"""The elastic mode (issue 25): real launches on 1 process (plain Python, no torchrun), 2 and 4 (`torchrun` over gloo), at
one global batch of 64 in 4 shards, of the digits CNN (BatchNorm, dropout, random crops and `aug_transforms`, through
`repro_learner(shards=4)`) and of a stock `tabular_learner` (BatchNorm1d, embedding dropout, through
`ReproCallback(shards=4)`): the same weights, buffers, optimizer state and metrics after every epoch. The negative
control, the digits with the mode off, trains in the same launches of 1 and 2 processes, and differs.
"""
import pytest
from pathlib import Path
from helpers import launch

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
    return {1: _ok(launch(JOB, d, 'w1', '--apps', with_off, nproc=1)), 2: _ok(launch(JOB, d, 'w2', '--apps', with_off)),
            4: _ok(launch(JOB, d, 'w4', '--apps', ','.join(APPS), nproc=4))}

def _result(r): return dict(epochs=r['epochs'], values=r['values'])

@pytest.mark.parametrize('app', APPS)
def test_the_same_bits_on_1_2_and_4_processes(worlds, app):
    "Weights, buffers and optimizer state after each epoch, and each epoch's metrics: equal on every rank of every world size."
    ref = _result(worlds[1][0][app])
    assert len(ref['epochs']) == 2
    for w, ranks in worlds.items():
        for r in ranks: assert _result(r[app]) == ref, f"{app}: rank {r['rank']} of {w} differs from one process"

def test_the_mode_off_differs_across_processes(worlds):
    "The negative control: without the mode, 1 and 2 processes at the same global batch train to other weights."
    one, two = worlds[1][0]['digits:off'], worlds[2][0]['digits:off']
    assert one['epochs'][0]['weights'] != two['epochs'][0]['weights'] and one['values'] != two['values']
    assert one['elastic'] is None

@pytest.mark.parametrize('app', APPS)
def test_the_manifest_records_the_mode(worlds, app):
    for w, ranks in worlds.items():
        assert ranks[0][app]['elastic'] == dict(shards=4, shard_size=16, world_size=w)
