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

# ---- the rhythm of a page: each definition followed soon by a cell that uses it
import ast, re
MAX_UNUSED_RUN = 5  # exported cells in a row without a cell that uses one of them

def _exported(src:str) -> bool: return bool(re.search(r'^#\|\s*export', src, re.M))

def _defined(src:str) -> set:
    "Names an exported cell defines: functions (`@patch`ed methods too), classes and assigned names."
    try: tree = ast.parse(src)
    except SyntaxError: return set()
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out

def _used(src:str) -> set:
    "Names and attribute names a cell mentions."
    try: tree = ast.parse(src)
    except SyntaxError: return set(re.findall(r'\w+', src))  # magics and the like: any word counts
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}

def unused_runs(cells:list) -> list:
    "The runs of exported cells, as (length, index of the run's first cell), each ended by a code cell that uses a name the run defined."
    runs, start, names, n = [], None, set(), 0
    for i, c in enumerate(cells):
        if c['cell_type'] != 'code': continue
        src = ''.join(c['source'])
        if _exported(src):
            if not (defined := _defined(src)): continue  # the imports
            if start is None: start = i
            n += 1; names |= defined
        elif n and _used(src) & names:
            runs.append((n, start)); start, names, n = None, set(), 0
    if n: runs.append((n, start))
    return runs

def longest_unused_run(nb:Path) -> tuple:
    "The longest run of exported cells without a cell that uses them, as (length, first cell); (0, None) without exports."
    return max(unused_runs(json.loads(nb.read_text())['cells']), default=(0, None))
