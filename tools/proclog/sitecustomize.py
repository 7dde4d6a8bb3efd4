"""Where the suite's CPU goes: every Python process logs its own CPU time when it exits, with the test or notebook that
started it, so the fresh interpreters a test spawns are counted against that test.

    PYTHONPATH=$PWD/tools/proclog PROCLOG_FILE=/tmp/proclog.jsonl bash tools/test.sh   # absolute: notebooks run in nbs/
    python tools/proclog/summary.py /tmp/proclog.jsonl

A process started by a pytest test is tagged with `PYTEST_CURRENT_TEST`, one started by a notebook under nbdev-test with
the notebook's name, and both tags pass to grandchildren (through the environment of `subprocess.Popen`). A process
killed by a signal, or ended by `os._exit` (pytest-xdist's and nbdev-test's workers, torchrun's killed ranks), logs
nothing: compare the logged total with the CPU time tools/test.sh prints. PYTHONPATH holds one sitecustomize: this one
cannot be combined with tools/forced_ids.
"""
import atexit, json, os, resource, sys, time

_t0, _LOG = time.time(), os.environ.get('PROCLOG_FILE', 'proclog.jsonl')
_STARTED_BY = os.environ.get('PROCLOG_ORIGIN', '')  # read now: _tag_children rewrites it for this process's children

def _origin() -> str:
    nb = sys.modules.get('nbdev.test')  # nbdev-test's worker: the notebook it is running
    if nb is not None and getattr(nb, '_cur_nb', [None])[0] is not None: return 'nb:' + nb._cur_nb[0].name
    test = os.environ.get('PYTEST_CURRENT_TEST')
    return 'py:' + test.rsplit(' (', 1)[0] if test else os.environ.get('PROCLOG_ORIGIN', '')

def _tag_children(event, args):
    if event != 'subprocess.Popen' or not (origin := _origin()): return
    os.environ['PROCLOG_ORIGIN'] = origin  # children that inherit the environment
    if isinstance(args[3], dict): args[3]['PROCLOG_ORIGIN'] = origin  # and those given one

def _log():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    worker = os.environ.get('PYTEST_XDIST_WORKER')
    origin = _STARTED_BY or (f'(pytest worker {worker})' if worker else '')
    rec = dict(pid=os.getpid(), ppid=os.getppid(), origin=origin, argv=' '.join(sys.argv)[:160],
               wall_s=round(time.time() - _t0, 2), cpu_s=round(ru.ru_utime + ru.ru_stime, 2), end=round(time.time(), 2))
    try:
        with open(_LOG, 'a') as f: f.write(json.dumps(rec) + '\n')  # one short line: appends from processes do not interleave
    except OSError: pass

sys.addaudithook(_tag_children)
atexit.register(_log)
