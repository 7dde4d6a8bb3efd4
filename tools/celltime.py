"""Seconds per code cell of one notebook, run alone the way nbdev-test runs it (execnb), longest first.

    python tools/celltime.py nbs/18_sweep.ipynb [--top 15]

Where a notebook's time goes, for the suite's time budget (README: Contributing). Cells marked `#| notest` or
`#| eval: false` are skipped, as nbdev-test skips them.
"""
import argparse, os, sys, time
from execnb.shell import CaptureShell, read_nb

def cell_times(path) -> list:
    "(seconds, cell index, first line) of every code cell nbdev-test runs, in order; stops at the first error."
    nb, rows = read_nb(path), []
    os.chdir(os.path.dirname(os.path.abspath(path)))
    shell = CaptureShell(path)
    for i, c in enumerate(nb.cells):
        if c.cell_type != 'code' or '#| notest' in c.source or '#| eval: false' in c.source: continue
        t = time.perf_counter(); shell.run(c.source); rows.append((time.perf_counter() - t, i, (c.source.splitlines() or [''])[0][:90]))
        if shell.exc: sys.exit(f"cell {i} raised {shell.exc!r}")
    return rows

if __name__ == '__main__':
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0]); a.add_argument('notebook'); a.add_argument('--top', type=int, default=15)
    args = a.parse_args()
    rows = cell_times(args.notebook)
    for dt, i, first in sorted(rows, reverse=True)[:args.top]: print(f"{dt:7.1f} s  cell {i}: {first}")
    print(f"total {sum(r[0] for r in rows):.1f} s over {len(rows)} cells")
