"""Every notebook under nbdev's own `test_nb`, as `nbdev-test --timing` runs them, but the longest ones first.

nbdev-test runs the notebooks in name order. The longest (`15_verify`, about ten minutes of the suite) then started about
halfway through and ran on alone at the end, one core idle: about a minute of the suite's tail on two cores. Started
first, the long ones run beside the rest. `LONGEST` lists them from `--timing`'s figures; the others follow in name order.
The settings are nbdev-test's: the config's skip flags and cell timeout, the notebooks' folder as working directory.

    python tools/nbtest.py [--n-workers 2] [--file-re REGEX]   # exit 1 when a notebook fails
"""
import argparse, re, sys
from fastcore.parallel import parallel
from fastcore.xtras import working_directory
from nbdev.config import get_config
from nbdev.doclinks import nbglob
from nbdev.test import test_nb

# the notebooks that take longest, longest first (`--timing` in clean-clone CI, 2026-12-06)
LONGEST = ('15_verify', '18_sweep', '07a_dvc', '25_reproduce', '00a_numerics', '20_resume', '12_callback')

def notebooks(file_re:str=None) -> list:
    "The notebooks nbdev-test would run (matching `file_re`), `LONGEST` first, then the others in name order."
    files = nbglob(as_path=True, file_re=file_re)  # sorted by name; skips `_`- and `.`-files as nbdev-test does
    rank = lambda f: LONGEST.index(f.stem) if f.stem in LONGEST else len(LONGEST)
    return sorted(files, key=rank)

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--n-workers', type=int, default=2); p.add_argument('--file-re', default=None)
    a = p.parse_args()
    cfg, files = get_config(), notebooks(a.file_re)
    with working_directory(cfg.nbs_path):
        results = parallel(test_nb, files, skip_flags=cfg.tst_flags.split(), force_flags=[], n_workers=a.n_workers, pause=0.01,
                           basepath=cfg.config_path, cell_timeout=cfg.get('cell_timeout') or None)
    passed, times = zip(*results)
    for t, f in sorted(zip(times, files), key=lambda o: -o[0]): print(f"{f.name}: {int(t)} secs")
    failed = [f.name for ok, f in zip(passed, files) if not ok]
    if failed: sys.exit(f"Notebooks failed: {', '.join(failed)}")
    print("Success.")

if __name__ == '__main__': main()
