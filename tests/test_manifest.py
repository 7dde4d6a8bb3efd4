"Run manifests end to end: fresh processes, what diff names, secrets, crashes while writing, concurrent writers, the CLI."
import json, os, queue, shutil, signal, subprocess, sys, threading, time
from pathlib import Path
import pytest
from helpers import HANG_S, run_cli

JOB = Path(__file__).parent/'manifest_job.py'
SECRETS = {'MY_API_TOKEN': 'tok-3f9a8b7c6d5e4f3a2b1c', 'SERVICE_KEY': 'k3y-value-0123456789', 'DB_SECRET_SALT': 'saltsaltsalt-42',
           'ADMIN_PASSWORD': 'hunter2-but-longer', 'NCCL_SOCKET_IFNAME': 'AKIAIOSFODNN7EXAMPLE', 'AWS_ACCESS_KEY_ID': 'AKIAI44QH8DHBEXAMPLE'}
REMOTE_TOKEN = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'

class Job:
    """A fresh process that runs `manifest_job.py` commands one after another, with the planted secrets in its environment.
    Used as a context manager: on the way out it is told to stop, and killed if it does not."""
    def __init__(self, cwd, runs, log:Path):
        env = {**os.environ, **SECRETS, 'FASTREPRO_RUNS': str(runs)}
        self.log, self.lines = log, queue.Queue()
        with open(log, 'w') as err:
            self.p = subprocess.Popen([sys.executable, str(JOB), 'serve'], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=err, text=True)
        threading.Thread(target=self._read, daemon=True).start()
    def _read(self):
        for line in self.p.stdout: self.lines.put(line)
        self.lines.put('')  # the job ended
    def send(self, *args):
        "Start a command, e.g. `send('digits', data, 42, 1e-2)`."
        self.p.stdin.write(json.dumps([str(a) for a in args]) + '\n'); self.p.stdin.flush()
    def result(self, timeout=600) -> Path:
        "The manifest the oldest command not yet read wrote (other lines the job prints are skipped)."
        deadline, line = time.time() + timeout, None
        while line is None or (line and not line.startswith('manifest: ')):
            try: line = self.lines.get(timeout=max(0., deadline - time.time()))
            except queue.Empty: line = ''
        path = Path(line[len('manifest: '):].strip()) if line else None
        assert path and path.is_file(), f"no manifest from the job within {timeout} s: {self.log.read_text()[-3000:]}"
        return path
    def run(self, *args) -> Path: self.send(*args); return self.result()
    def __enter__(self): return self
    def __exit__(self, *exc):
        self.p.stdin.close()
        try: self.p.wait(60)
        finally: self.p.kill()

def git(cwd, *args): subprocess.run(['git', *args], cwd=cwd, check=True, capture_output=True)

@pytest.fixture(scope='module')
def world(tmp_path_factory):
    "A git repo as the working directory, a copy of the digits, and manifests of runs that each change one thing."
    from fastrepro.examples import digits_path
    root = tmp_path_factory.mktemp('manifests')
    repo, runs, data = root/'repo', root/'runs', root/'digits'
    repo.mkdir(); shutil.copytree(digits_path(), data, ignore=shutil.ignore_patterns('models'))  # a Learner on the shared copy writes models/ there
    for i, png in enumerate(sorted(data.rglob('*.png'))):
        if i % 3: png.unlink()  # a third of the digits: manifests, not learning, are the point, and each fit is three times shorter
    (repo/'train.py').write_text('lr = 1e-2\n')
    git(repo, 'init', '-q'); git(repo, 'add', '.')
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init')
    git(repo, 'remote', 'add', 'origin', f'https://alice:{REMOTE_TOKEN}@example.com/team/repo.git')
    # Two fresh processes at once: `again` alone in one, the runs that each change one thing one after another in the other.
    with Job(repo, runs, root/'one.log') as one, Job(repo, runs, root/'two.log') as two:
        two.send('digits', data, 42, 1e-2)
        m = dict(base=one.run('digits', data, 42, 1e-2), seed=one.run('digits', data, 7, 1e-2), lr=one.run('digits', data, 42, 3e-3))
        m['again'] = two.result()
        png = sorted((data/'train').rglob('*.png'))[0]
        original = png.read_bytes()
        png.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
        m['data'] = one.run('digits', data, 42, 1e-2)
        png.write_bytes(original)
        (repo/'train.py').write_text('lr = 3e-3\n')
        m['code'] = one.run('digits', data, 42, 1e-2)
    return dict(runs=runs, repo=repo, m=m)

def _cli(*args, runs=None): return run_cli(*args, env={'FASTREPRO_RUNS': runs} if runs else None)

def _load(p):
    from fastrepro.manifest import load_manifest
    return load_manifest(p)

def test_manifest_fields_filled(world):
    m = _load(world['m']['base'])
    assert m['status'] == 'completed' and m['duration_s'] > 0
    assert m['code']['commit'] and m['code']['dirty'] is False and m['code']['remote'] == 'https://example.com/team/repo.git'
    assert m['environment']['packages']['fastai'] and m['environment']['torch']
    assert m['hardware']['cpu_count'] >= 1 and m['hardware']['gpus'] is None  # null on CPU, not missing
    assert m['data']['splits']['train']['n'] == 479 and m['data']['vocab_sha256']
    assert m['hyperparameters']['bs'] == 64 and m['hyperparameters']['num_workers'] == 0
    assert m['results']['final']['accuracy'] > 0.1 and m['results']['final_weights_sha256']
    assert m['randomness']['seed'] == 42 and m['randomness']['set_seed']['deterministic'] == 'warn'
    assert m['randomness']['nondeterministic_ops'] == {}  # counted under warn-only: none ran on this CPU
    assert m['hyperparameters']['method'] == 'fit' and m['hyperparameters']['calls']['fit']['lr'] == 1e-2
    assert m['error'] is None and m['artifacts'] == []

def test_fresh_runs_differ_in_nothing_that_matters(world):
    from fastrepro.diff import diff_manifests
    m = world['m']
    assert diff_manifests(_load(m['base']), _load(m['again'])).matters == []
    assert _cli('diff', m['base'], m['again']).returncode == 0

@pytest.mark.parametrize('change,layer', [('seed', 'randomness'), ('lr', 'hyperparameters'), ('data', 'data'), ('code', 'code')])
def test_diff_names_the_layer(world, change, layer):
    from fastrepro.diff import diff_manifests
    d = diff_manifests(_load(world['m']['base']), _load(world['m'][change]))
    assert layer in d.layers(), (change, str(d))
    r = _cli('diff', world['m']['base'], world['m'][change])
    assert r.returncode == 1 and f'{layer}:' in r.stdout

def test_diff_names_only_the_data_split_that_changed(world):
    from fastrepro.diff import diff_manifests
    fields = [f for l, f, *_ in diff_manifests(_load(world['m']['base']), _load(world['m']['data'])).matters if l == 'data']
    assert 'data.splits.train.sha256' in fields and 'data.splits.valid.sha256' not in fields

def test_no_secret_reaches_a_manifest(world):
    texts = [p.read_text() for p in world['runs'].glob('*.json')]
    assert len(texts) == 6
    for t in texts:
        for v in [*SECRETS.values(), REMOTE_TOKEN, 'alice']: assert v not in t, v
        for name in ('MY_API_TOKEN', 'SERVICE_KEY', 'DB_SECRET_SALT', 'ADMIN_PASSWORD', 'AWS_ACCESS_KEY_ID'): assert name not in t, name

def test_cli_show_runs_and_errors(world):
    runs, base = world['runs'], world['m']['base']
    r = _cli('show', base.stem, runs=runs); assert r.returncode == 0 and base.stem in r.stdout
    r = _cli('runs', runs); assert r.returncode == 0 and len(r.stdout.splitlines()) == 6
    r = _cli('check-env', base); assert r.returncode == 0, r.stdout
    assert _cli('show', 'nothing-like-this', runs=runs).returncode == 2
    shared = os.path.commonprefix([p.stem for p in runs.glob('*.json')])  # a prefix of every run, whatever their times and ids
    r = _cli('show', shared, runs=runs); assert r.returncode == 2 and 'matches 6 runs' in r.stderr
    assert _cli('diff', '--help').returncode == 0

def test_check_env_flags_a_changed_environment(world, tmp_path):
    m = json.loads(world['m']['base'].read_text())
    m['environment']['packages']['torch'] = '1.0.0'
    (tmp_path/'old.json').write_text(json.dumps(m))
    r = _cli('check-env', tmp_path/'old.json')
    assert r.returncode == 1 and 'torch 1.0.0' in r.stdout

WRITER = """
import sys
from fastrepro.manifest import new_manifest, write_manifest
m = new_manifest(seed=1); m['results'] = dict(big='x' * 20_000_000)
write_manifest(m, sys.argv[1]); print('wrote one', flush=True)
while True: write_manifest(m, sys.argv[1])
"""

@pytest.mark.slow  # 30+ s of fresh processes: the full suite runs it, the inner loop does not
def test_sigkill_while_writing_leaves_no_broken_manifest(tmp_path, monkeypatch):
    "Kill writers at varied moments and mid-write: every *.json stays whole, and a later write cleans up."
    monkeypatch.chdir(tmp_path)  # outside any git checkout: in one with uncommitted changes, manifests store the patch in objects/
    from fastrepro.manifest import load_manifest, new_manifest, write_manifest
    runs, left = tmp_path/'runs', set()
    for kill in range(6):
        p = subprocess.Popen([sys.executable, '-c', WRITER, str(runs)], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == 'wrote one'  # its first write also removed what earlier kills left
        if kill % 2: time.sleep(0.1 * kill)  # anywhere in a write, which takes about 0.6 s here
        else:  # the moment its temp file appears: mid-write by construction
            deadline = time.time() + 10
            while not any(runs.glob('.tmp-*')) and time.time() < deadline: time.sleep(0.001)
        p.send_signal(signal.SIGKILL); p.wait()
        left |= {f.name for f in runs.iterdir() if f.suffix != '.json'}
    assert left and all(n.startswith('.tmp-') for n in left), left
    for f in runs.glob('*.json'): load_manifest(f)
    write_manifest(new_manifest(seed=2), runs)
    assert [f for f in runs.iterdir() if f.suffix != '.json'] == []

def _stacks(p) -> str:
    "Where a hung child is: whether it still runs, what else holds its pipes, and every thread's Python stack (faulthandler, on SIGABRT)."
    alive = p.poll() is None
    kids = subprocess.run(['ps', '--ppid', str(p.pid), '-o', 'pid,stat,args'], capture_output=True, text=True).stdout
    if alive: p.send_signal(signal.SIGABRT)
    try: _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired: err = '(its pipes stayed open after SIGABRT: a process it started holds them)'
    return f"child {'still running' if alive else f'exited {p.returncode}'}; its children:\n{kids}\nits stderr:\n{err[-6000:]}"

def _interrupt(p, every:float=60.) -> str:  # longer than the 4 s (unloaded) a cancelled fit takes to write its manifest and exit
    "Ctrl-C as a user presses it: again while the fit goes on. fastai's `Recorder` logs each epoch's values through\n"
    "`fastai.learner._maybe_item`, whose bare `except:` swallows a KeyboardInterrupt that lands inside it (16 of 20 SIGINTs\n"
    "sent during a loop of it; one CI run of four on 2026-12-06 hit it, and its wine fit went on for 600 s)."
    for _ in range(int(HANG_S // every)):
        p.send_signal(signal.SIGINT)
        try: return p.communicate(timeout=every)[1]
        except subprocess.TimeoutExpired: pass
    pytest.fail(f"no exit {HANG_S} s after SIGINT, sent every {every} s: {_stacks(p)}")

def test_interrupted_fit_is_recorded_as_cancelled(tmp_path):
    "Ctrl-C in the middle of a fit, in a fresh process: the manifest says cancelled, with the epochs that finished."
    from fastrepro.manifest import load_manifest
    runs = tmp_path/'runs'
    # SIGINT at its default: a shell's background job (`cmd &`) starts with it ignored, and Python then raises no KeyboardInterrupt
    p = subprocess.Popen([sys.executable, str(JOB), 'forever'], env={**os.environ, 'FASTREPRO_RUNS': str(runs), 'PYTHONFAULTHANDLER': '1'},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    while not list(runs.glob('*.json')) and time.time() < deadline and p.poll() is None: time.sleep(0.1)
    assert list(runs.glob('*.json')), 'the fit never started: ' + p.communicate()[1][-2000:]
    time.sleep(2)  # some epochs in
    try: err = _interrupt(p)
    finally: p.kill()  # never leave a fit running for the rest of the suite
    assert p.returncode != 0 and 'KeyboardInterrupt' in err, err[-2000:]
    [f] = runs.glob('*.json')
    m = load_manifest(f)
    assert (m['status'], m['error']) == ('cancelled', 'KeyboardInterrupt') and m['results']['epochs'] and m['ended_at']

@pytest.mark.slow  # 30+ s of fresh processes: the full suite runs it, the inner loop does not
def test_concurrent_fits(tmp_path):
    "Four fresh processes end their fits at the same moment: four distinct, complete manifests."
    from fastrepro.manifest import load_manifest
    runs, start = tmp_path/'runs', time.time() + 30  # after every import, even on a busy machine
    env = {**os.environ, 'FASTREPRO_RUNS': str(runs)}
    procs = [subprocess.Popen([sys.executable, str(JOB), 'tabular', str(start)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-500:] for _, e in outs if e]
    files = sorted(runs.glob('*.json'))
    assert len(files) == 4 and len({f.name for f in files}) == 4
    assert all(load_manifest(f)['status'] == 'completed' for f in files)
