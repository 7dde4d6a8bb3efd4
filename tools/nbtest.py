"""Every notebook under nbdev's own `test_nb`, as `nbdev-test --timing` runs them, but the longest first, each in a process
of its own.

- **The longest first.** nbdev-test runs the notebooks in name order. The longest (`15_verify`, about ten minutes of the
  suite) then started about halfway through and ran on alone at the end, one core idle: about a minute of the suite's tail
  on two cores. `LONGEST` lists them from `--timing`'s figures; the others follow in name order.
- **A process of its own.** nbdev-test's two worker processes run notebook after notebook, and what one notebook leaves in
  its process stays for the next: a hide cell's `warnings.filterwarnings('ignore', category=UserWarning)` silenced the
  `test_warns` of `01_seed` once the order changed. Here each notebook runs in a fresh fork of a server that has imported
  torch, fastai and fastrepro and run nothing else (`multiprocessing`'s forkserver, with those modules preloaded): no
  notebook sees another's state, and none pays the imports.

The settings are nbdev-test's: the config's skip flags and cell timeout, the notebooks' folder as working directory. It
prints each notebook's time, longest first, and the CPU-seconds of the notebooks' processes, which the forkserver started,
so that a shell's `times` does not count them.

    python tools/nbtest.py [--n-workers 2] [--file-re REGEX]   # exit 1 when a notebook fails
"""
import argparse, multiprocessing, resource, sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from fastcore.xtras import working_directory
from nbdev.config import get_config
from nbdev.doclinks import nbglob
from nbdev.test import test_nb

# the notebooks that take longest, longest first (`--timing` in clean-clone CI, 2026-12-06)
LONGEST = ('15_verify', '18_sweep', '25_reproduce', '07a_dvc', '00a_numerics', '12_callback', '20_resume')
# imported once, in the server every notebook's process forks from
PRELOAD = ['nbdev.test', 'fastai.vision.all', 'fastai.tabular.all', 'fastai.text.all', 'fastai.collab', 'fastrepro.all']

def notebooks(file_re:str=None) -> list:
    "The notebooks nbdev-test would run (matching `file_re`), `LONGEST` first, then the others in name order."
    files = nbglob(as_path=True, file_re=file_re)  # sorted by name; skips `_`- and `.`-files as nbdev-test does
    rank = lambda f: LONGEST.index(f.stem) if f.stem in LONGEST else len(LONGEST)
    return sorted(files, key=rank)

def _cpu_s() -> float:
    "CPU-seconds of this process and of the children it waited for (fresh runs, loader workers)."
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))

def _test_fresh(fn, **kwargs) -> tuple:
    "`test_nb` in a process the forkserver started (whose own workers then start by this platform's default, as under nbdev-test), and its CPU-seconds."
    multiprocessing.set_start_method(None, force=True)  # forkserver's children inherit it; a notebook's loaders would pickle
    result = test_nb(fn, **kwargs)
    from fastrepro.warm import shutdown_warm
    shutdown_warm()  # waits for the notebook's warm interpreters, so that their CPU-seconds (and their runs') are counted
    return (*result, _cpu_s())

def run_all(files:list, n_workers:int) -> list:
    "(passed, seconds, CPU-seconds) of each notebook, each run by `test_nb` in a fresh process, `n_workers` at a time, in the order given."
    cfg = get_config()
    run = partial(_test_fresh, skip_flags=cfg.tst_flags.split(), force_flags=[], basepath=cfg.config_path,
                  cell_timeout=cfg.get('cell_timeout') or None)
    multiprocessing.set_forkserver_preload(PRELOAD)
    pool = ProcessPoolExecutor(n_workers, mp_context=multiprocessing.get_context('forkserver'), max_tasks_per_child=1)
    with working_directory(cfg.nbs_path), pool: return list(pool.map(run, files))  # tasks start in submission order

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--n-workers', type=int, default=2); p.add_argument('--file-re', default=None)
    a = p.parse_args()
    files = notebooks(a.file_re)
    passed, times, cpu = zip(*run_all(files, a.n_workers))
    for t, f in sorted(zip(times, files), key=lambda o: -o[0]): print(f"{f.name}: {int(t)} secs")
    # the forkserver's children are not this process's, so a shell's `times` does not count them
    print(f"-- CPU time of the notebooks' processes and what they waited for: {sum(cpu):.0f} s")
    failed = [f.name for ok, f in zip(passed, files) if not ok]
    if failed: sys.exit(f"Notebooks failed: {', '.join(failed)}")
    print("Success.")

if __name__ == '__main__': main()
