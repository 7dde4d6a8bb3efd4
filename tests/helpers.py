"""Helpers the test modules share (`from helpers import run_cli`).

`run_cli` runs the `fastrepro` command in this process, through the function its console script calls, so a test does not
pay a fresh interpreter's import of torch and fastai (about 8 s on two cores) for each command. The console script
itself, as a real subprocess, is checked once, in `tests/test_diverge.py::test_cli_diverge_exit_codes`.
"""
import contextlib, io, json, os, subprocess, sys, time
from pathlib import Path

# Seconds after which a subprocess that should end is taken as hung, and its test fails. A guard against hangs, never a
# measure of speed: on a loaded day CI's two cores ran 1.8 times slower than on a quiet one, and healthy launches that a
# 120 s guard allowed came within 13 s of it (a 2-rank torchrun refusal: 107 s), so the guard is generous. A hang costs
# this long once; a healthy run never waits on it.
HANG_S = 600

def git(repo, *args):
    "git `args` in `repo`, with an identity of its own for commits (a fresh machine has none); raises on failure."
    subprocess.run(['git', '-c', 'user.email=t@fastrepro.dev', '-c', 'user.name=t', *args], cwd=repo, check=True, capture_output=True)

def run_cli(*args, env:dict=None) -> subprocess.CompletedProcess:
    "`fastrepro ARGS` with the variables `env` set meanwhile: its exit code, standard output and standard error."
    from fastrepro.cli import main
    out, err = io.StringIO(), io.StringIO()
    with _environ(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main([str(a) for a in args])
        except SystemExit as e: code = e.code  # argparse: --help, or bad usage
    return subprocess.CompletedProcess(['fastrepro', *map(str, args)], code, out.getvalue(), err.getvalue())

@contextlib.contextmanager
def start_method(method:str):
    """multiprocessing's start method set to `method` meanwhile, as a user's `set_start_method` (or Python 3.14's default)
    sets it, and the caller's put back: DataLoader workers, fastai's included, start by it."""
    import multiprocessing
    callers = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method(method, force=True)
    try: yield
    finally: multiprocessing.set_start_method(callers, force=True)

@contextlib.contextmanager
def _environ(env:dict):
    "Set the variables `env` meanwhile; then put back what was there (or nothing)."
    old = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try: yield
    finally:
        for k, v in old.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v

def launch(job:Path, folder:Path, name:str, *args, nproc:int=2, env:dict=None, timeout:float=HANG_S):
    """Run the script `job` under `torchrun --nproc_per_node=nproc` (or alone, `nproc=1`) with `folder/name` and `args`; return
    the completed process, each rank's result (`folder/name.rank<r>.json`, or None) and the seconds taken. A launch that
    runs past `timeout` fails the test, and leaves nothing running: torchrun starts each rank in a session of its own, so
    the ranks and their loader workers are killed one by one, not through torchrun's process group."""
    import psutil, pytest
    t = time.time()
    torchrun = [str(Path(sys.executable).with_name('torchrun')), '--standalone', f'--nproc_per_node={nproc}']
    cmd = (torchrun if nproc > 1 else [sys.executable]) + [str(job), str(folder/name), *args]
    e = {**os.environ, 'FASTREPRO_RUNS': str(folder/name) + '-runs', **(env or {})}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    try: out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(psutil.NoSuchProcess):
            for q in [*psutil.Process(p.pid).children(recursive=True), psutil.Process(p.pid)]:
                with contextlib.suppress(psutil.NoSuchProcess): q.kill()
        _, err = p.communicate()
        pytest.fail(f"the launch {name!r} ran past {timeout} s and was killed with its ranks and workers:\n{err[-3000:]}")
    ranks = [json.loads(f.read_text()) if (f := folder/f'{name}.rank{r}.json').exists() else None for r in range(nproc)]
    return subprocess.CompletedProcess(cmd, p.returncode, out, err), ranks, time.time() - t
