"""Fresh runs forked from warm interpreters (`fastrepro.warm`, issue 45): as fresh as cold ones, for every check, with
their faults handled. Each test asks for warm or cold runs itself, so the file means the same under FASTREPRO_WARM=0. The negative controls of freshness through `verify_reproducible` (a hash-seed dependence, a draw
from an unseeded global generator, and one lane that would miss the first) are in `tests/test_contract.py`."""
import os, signal, subprocess, sys, time, warnings
from pathlib import Path
import pytest, torch
from fastrepro.bits import same_bits
from fastrepro.fresh import fresh_payload, launch, pack_for_child, run_fresh, fresh_tempdir
from fastrepro.warm import WarmInterpreter, WarmUnavailable, run_warm, warm_interpreter

pytestmark = pytest.mark.slow  # fresh interpreters

def _wine():
    from fastrepro.all import wine_learner
    return wine_learner(seed=1, layers=(16,))

def _synth():
    from fastai.test_utils import synth_learner
    from fastrepro.callback import ReproCallback
    return synth_learner(cbs=ReproCallback(seed=3))

def _fit(learn): learn.fit(1, 1e-2)

def _started(r) -> list: return [m['process']['started'] for m in r['manifests']]

def test_warm_runs_give_a_cold_runs_bits_on_tabular_and_portable_numerics():
    """A run forked from a warm interpreter trains to the bits of a cold one: stock, and under numerics='portable' (whose
    pins torch reads as it loads). A stock run is never forked from a portable interpreter: it gets one of its own."""
    runs = {(n, w): run_fresh(fresh_payload(_wine, _fit), numerics=n, warm=w) for n in ('stock', 'portable') for w in (False, True)}
    for n in ('stock', 'portable'):
        cold, warm = runs[n, False], runs[n, True]
        assert same_bits(cold['state'], warm['state']) and cold['epochs'] == warm['epochs'], n
        assert (_started(cold), _started(warm)) == (['cold'], ['warm'])
        assert cold['numerics'] == warm['numerics'] and warm['numerics']['portable'] == (n == 'portable')
    with pytest.raises(WarmUnavailable, match='load-time variables differ'):  # refused, were it asked
        portable = warm_interpreter(dict(os.environ, FASTREPRO_NUMERICS='portable', ATEN_CPU_CAPABILITY='default'))
        portable.run('print(1)', [], dict(os.environ), '.')

def test_a_warm_run_starts_with_a_cold_runs_thread_count(monkeypatch):
    """Without OMP_NUM_THREADS, torch starts an OpenMP thread as it loads: the warm interpreter is told one thread, and each
    fork sets torch's thread count to a cold start's, with the bits of a cold run."""
    monkeypatch.delenv('OMP_NUM_THREADS')
    cold, warm = (run_fresh(fresh_payload(_wine, _fit), warm=w) for w in (False, True))
    assert cold['numerics']['threads'] == warm['numerics']['threads'] and (warm['numerics']['threads'] > 1 or os.cpu_count() == 1)  # not the warm interpreter's one
    assert same_bits(cold['state'], warm['state']) and _started(warm) == ['warm']

def test_two_runs_from_one_warm_interpreter_draw_their_own_entropy(monkeypatch):
    """Two runs in one lane share a hash seed, and nothing else: a pipeline nudged by NumPy's global generator before any
    seed (which Python's fork hook does not reseed) trains to other bits in each, as in two cold processes."""
    import fragile
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get('PYTHONPATH')])))
    a, b = (run_fresh(fresh_payload(fragile.numpy_before_seeding, fragile.fit), warm=True, lane=0) for _ in range(2))
    assert _started(a) == _started(b) == ['warm']
    assert not same_bits(a['state'], b['state'])

def test_switched_off_by_the_environment(monkeypatch):
    "FASTREPRO_WARM=0 starts every fresh run cold, and its manifest says so."
    monkeypatch.setenv('FASTREPRO_WARM', '0')
    assert _started(run_fresh(fresh_payload(_synth, _fit))) == ['cold']

def test_an_interpreter_that_dies_during_a_run_leaves_it_to_a_cold_start(tmp_path):
    """The warm interpreter killed while its run sleeps: the run dies with it (PR_SET_PDEATHSIG), and `launch` starts it
    again cold, with a warning, from a clean runs folder; the next run gets a new warm interpreter."""
    env = dict(os.environ)
    w = warm_interpreter({**env, 'FASTREPRO_RUNS': 'x', 'PYTHONHASHSEED': 'random', 'FASTREPRO_MLFLOW': 'off'})
    w.wait_ready()
    def job():
        import time; time.sleep(3); return 'done'
    killer = subprocess.Popen(['sh', '-c', f'sleep 1.5; kill -9 {w.proc.pid}'])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter('always')
        res, out = launch(pack_for_child(job), tmp_path, 'slow', warm=True)
    killer.wait()
    assert res.returncode == 0 and torch.load(out) == 'done' and not w.alive()
    assert any('starts cold' in str(s.message) and 'died' in str(s.message) for s in seen), [str(s.message) for s in seen]
    res, _ = launch(pack_for_child(job), tmp_path, 'again', warm=True)
    assert res.returncode == 0 and warm_interpreter(env) is not w and warm_interpreter(env).alive()  # a new one

def test_an_interpreter_that_started_a_thread_is_not_forked():
    """arrow's jemalloc started with its purging thread, as the user's own setting asks (`fastrepro.warm.QUIET` turns it off
    only where the user did not set it): the warm interpreter counts the thread after its imports, and refuses to fork."""
    w = WarmInterpreter({**os.environ, 'JE_ARROW_MALLOC_CONF': 'background_thread:true'})
    with pytest.raises(WarmUnavailable, match=r'started 1 thread\(s\) while importing'): w.wait_ready()
    assert not w.alive()

def test_a_killed_session_leaves_no_process_behind(tmp_path):
    "A session SIGKILLed while its warm run sleeps: its warm interpreter sees its socket close and kills the run, then exits."
    import psutil
    code = ("import os, sys; from fastrepro.warm import warm_interpreter; env = dict(os.environ); w = warm_interpreter(env); "
            "print(w.proc.pid, flush=True); w.run('import os, time; print(os.getpid(), flush=True); time.sleep(600)', [], env, '.')")
    session = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True)
    zygote = int(session.stdout.readline())
    deadline = time.time() + 120
    while not (runs := psutil.Process(zygote).children()) and time.time() < deadline: time.sleep(0.2)
    assert runs, 'the warm run did not start'
    session.send_signal(signal.SIGKILL); session.wait()
    gone, alive = psutil.wait_procs([psutil.Process(zygote), *runs], timeout=30)
    assert not alive, alive
