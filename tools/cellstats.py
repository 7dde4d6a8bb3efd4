"""Lines per code cell, per notebook: the docs pages keep cells small (median <= 5, p90 <= 15), as fastcore's do.

python3 tools/cellstats.py [nbs]
"""
import json, statistics, sys
from pathlib import Path

def sizes(nb:Path) -> list:
    return [len(''.join(c['source']).splitlines()) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']

def p90(xs): xs = sorted(xs); return xs[int(0.9 * (len(xs) - 1))]

def stats(folder='nbs') -> dict:
    "{notebook: (cells, median, p90, max)}"
    return {p.name: (len(s), statistics.median(s), p90(s), max(s)) for p in sorted(Path(folder).glob('*.ipynb')) if (s := sizes(p))}

if __name__ == '__main__':
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else 'nbs')
    for name, (n, med, hi, mx) in stats(folder).items():
        print(f"{name:22} cells={n:3} median={med:4} p90={hi:3} max={mx}")
    allc = [x for p in sorted(folder.glob('*.ipynb')) for x in sizes(p)]
    print(f"{'ALL':22} cells={len(allc):3} median={statistics.median(allc):4} p90={p90(allc):3}")
