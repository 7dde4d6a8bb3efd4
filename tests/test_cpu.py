"""Portable numerics (issue 37): a run gives the same bits natively and on emulated CPUs (`qemu-x86_64`), in `'portable'` on
every model and in `'portable-avx2'` on those with AVX2, and stock numerics, the negative control, does not. Every test here
is marked `cpu_matrix`, which `tools/test.sh` leaves out (about 25 emulated runs of up to a minute each). CI's rows are the
digits CNN on an emulated Nehalem, portable and stock, in `nbs/15_verify` (`verify_reproducible`) and `nbs/25_reproduce`
(`reproduce(cpu=...)`), and `'portable-avx2'` in small in `nbs/00a_numerics`:

    pytest -m cpu_matrix -n 0 -s tests/test_cpu.py
"""
import json, os, subprocess, sys
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
import pytest
from apps import APPS
from helpers import git

CPUS = ('Nehalem', 'Haswell', 'EPYC')  # plain SSE4.2; AVX2 from Intel; AVX2 from AMD, whose CPUID sends MKL down its non-Intel path
LEVEL_CPUS = {'portable': CPUS, 'portable-avx2': CPUS[1:]}  # 'portable-avx2' needs AVX2

@pytest.fixture(scope='module')
def two_at_a_time():
    "The native run and an emulated one side by side, on the two cores."
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the children cannot import this test module
    with ThreadPoolExecutor(2) as pool: yield pool

def _digits(num_workers=0):
    from fastai.vision.all import accuracy
    from fastrepro.all import repro_learner, digits_dblock, digits_cnn, digits_path
    return repro_learner(digits_dblock(every=3), digits_path(), seed=42, model=digits_cnn, num_workers=num_workers, metrics=accuracy)

PIPELINES = {'digits': (_digits, lambda l: l.fit_one_cycle(1, 1e-2)),  # conv, BatchNorm, dropout, aug_transforms, Adam
             'tabular': (lambda: APPS['tabular'].make(0), APPS['tabular'].fit),  # embeddings, BatchNorm, Categorify, Normalize
             'collab': (lambda: APPS['collab'].make(0), APPS['collab'].fit)}  # embeddings, sigmoid range, weight decay

def _cpu_check(name, cpus, numerics, pool):
    from fastrepro.verify import verify_reproducible
    make, fit = PIPELINES[name]
    return verify_reproducible(make, fit, checks=('cpu',), cpus=cpus, numerics=numerics, executor=pool, show_progress=False)

def _show(report):
    report.show()
    return {c: (r.identical, r.max_abs_diff) for c, r in report.comparisons.items()}

@pytest.mark.cpu_matrix
def test_a_portable_tabular_run_is_bitwise_identical_on_an_emulated_amd_cpu(two_at_a_time):
    r = _cpu_check('tabular', ('EPYC',), 'portable', two_at_a_time)
    assert r.checks == {'cpu:EPYC': True}, _show(r)
    native, epyc = r.runs
    assert (native['numerics']['portable'], epyc['numerics']['portable']) == (True, True)
    assert (native['cpu']['emulated'], epyc['cpu']['emulated'], epyc['cpu']['vendor']) == (None, 'EPYC', 'AuthenticAMD')
    assert 'avx512f' not in epyc['cpu']['flags'] and 'avx2' in epyc['cpu']['flags']
    assert epyc['manifests'][0]['hardware']['numerics']['mkl_branch'] == 'COMPATIBLE'  # the record says what was in force

@pytest.mark.cpu_matrix
@pytest.mark.parametrize('level', LEVEL_CPUS)
@pytest.mark.parametrize('name', PIPELINES)
def test_portable_runs_are_bitwise_identical_natively_and_on_every_emulated_cpu(name, level, two_at_a_time):
    r = _cpu_check(name, LEVEL_CPUS[level], level, two_at_a_time)
    assert r.identical, _show(r)
    assert all(run['numerics']['portable'] and run['numerics']['asked'] == level for run in r.runs)

@pytest.mark.cpu_matrix
@pytest.mark.parametrize('name', PIPELINES)
def test_stock_runs_move_on_an_emulated_cpu(name, two_at_a_time):
    "The negative control: without the mode, the same pipeline gives other bits on another CPU."
    r = _cpu_check(name, ('Nehalem', 'Haswell'), 'stock', two_at_a_time)
    assert r.checks == {'cpu:Nehalem': False, 'cpu:Haswell': False}, _show(r)
    assert r.runs[0]['numerics']['capability'] == 'AVX512' or r.runs[0]['numerics']['capability'] == 'AVX2'

@pytest.mark.cpu_matrix
def test_find_divergence_names_where_stock_runs_on_two_cpus_part():
    "A stock run natively and on an emulated Nehalem part at the first step: the initial weights already differ (`torch.randn`'s vectorised fill)."
    import cloudpickle
    from fastrepro.diverge import find_divergence
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    make, fit = PIPELINES['digits']
    stock = find_divergence(make, fit, max_steps=2, cpus=(None, 'Nehalem'), numerics='stock')
    print(stock)
    assert not stock.identical and stock.global_step == 0
    portable = find_divergence(make, fit, max_steps=2, cpus=(None, 'Nehalem'), numerics='portable')
    assert portable.identical, str(portable)

@pytest.fixture(scope='module')
def avx2_record(tmp_path_factory) -> Path:
    "`python -m train` in a repository of its own, run natively in `'portable-avx2'`, as a user runs it: its manifest."
    from fastrepro.examples import digits_path
    tmp = tmp_path_factory.mktemp('avx2')
    data, repo = digits_path(tmp/'digits'), tmp/'repo'
    repo.mkdir()
    (repo/'train.py').write_text("from fastai.vision.all import accuracy\nfrom fastrepro.all import repro_learner, digits_dblock, digits_cnn\n"
                                 f"learn = repro_learner(digits_dblock(every=3), {str(data)!r}, seed=5, model=digits_cnn, num_workers=0, metrics=accuracy)\n"
                                 "learn.fit_one_cycle(1, 1e-2)\n")
    git(repo, 'init', '-q'); git(repo, 'add', '.'); git(repo, 'commit', '-qm', 'a training script')
    env = {k: v for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'}
    subprocess.run([sys.executable, 'train.py'], cwd=repo, check=True, capture_output=True,
                   env=dict(env, FASTREPRO_RUNS=str(tmp/'runs'), FASTREPRO_NUMERICS='portable-avx2'))
    [record] = (tmp/'runs').glob('*.json')
    return record

@pytest.mark.cpu_matrix
def test_a_portable_avx2_record_reproduces_bitwise_on_an_emulated_haswell_and_drills_on_an_emulated_epyc(avx2_record):
    "The record's level is set before the rerun's torch starts, on another CPU: `reproduce --cpu` and `drill --cpu` end to end."
    from fastrepro.manifest import load_manifest
    from fastrepro.reproduce import reproduce
    from fastrepro.drill import drill, verify_log, DRILL_LOG
    m = load_manifest(avx2_record)
    assert (m['hardware']['numerics']['asked'], m['hardware']['numerics']['portable']) == ('portable-avx2', True)
    r = reproduce(avx2_record, cpu='Haswell')
    assert (r.verdict, r.exit_code) == ('bitwise', 0), r
    assert r.new['hardware']['cpu']['emulated'] == 'Haswell' and r.new['hardware']['numerics']['portable'] is True
    d = drill(avx2_record.parent, sample=1, seed=0, show_progress=False, cpu='EPYC')
    [row] = [json.loads(l) for l in (avx2_record.parent/DRILL_LOG).read_text().splitlines()]
    assert (row['verdict'], row['cpu']) == ('bitwise', 'EPYC (emulated)'), d
    assert verify_log(avx2_record.parent) == []
    with pytest.raises(ValueError, match="numerics='portable-avx2' needs a CPU with AVX2 and FMA, and the emulated Nehalem"):
        reproduce(avx2_record, cpu='Nehalem')  # refused before anything runs: torch's AVX2 kernels would stop it
