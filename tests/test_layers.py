"""One room per idea (issue 36): each module of fastrepro is one notebook, `nbs/NN_<module>.ipynb`, and may import only the
modules of lower numbers, counting imports inside functions; no private name crosses from one module into another; no
module grows past about 500 lines; and a private helper's name means one thing. The layers are drawn in CONTRIBUTING.md.
Each check has its negative control: the edge, import, size or name it exists to catch, put back."""
import ast, json, re
from collections import defaultdict
from pathlib import Path
import fastrepro

SRC = Path(fastrepro.__file__).parent
NBS = SRC.parent/'nbs'
MAX_LINES = 520  # "about 500"

def modules(src:Path=SRC) -> dict:
    "Each module of the package generated from a notebook: {name: its source}."
    return {f.stem: f.read_text() for f in sorted(src.glob('*.py')) if f.stem not in ('_modidx', 'all', '__init__')}

def imports(source:str) -> list:
    "(module of the package, names) of each import of `source`, a function's body included."
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module: out.append((node.module.split('.')[0], [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom) and node.level == 1: out.extend((a.name, []) for a in node.names)  # from . import x
        elif isinstance(node, ast.ImportFrom) and (node.module or '').startswith('fastrepro.'): out.append((node.module.split('.')[1], [a.name for a in node.names]))
        elif isinstance(node, ast.Import): out.extend((a.name.split('.')[1], []) for a in node.names if a.name.startswith('fastrepro.'))
    return out

def import_graph(mods:dict=None) -> dict:
    "Each module, and the package's modules it imports anywhere in its code."
    mods = modules() if mods is None else mods
    return {m: {d for d, _ in imports(s) if d in mods} - {m} for m, s in mods.items()}

def room_number(name:str) -> tuple:
    "A notebook's place in the layers, `(NN, letter)`: `00a_numerics` sits between `00_bits` and `01_seed`, as fastai's `09b` pages do."
    m = re.match(r'(\d+)([a-z]?)_', name)
    return int(m.group(1)), m.group(2)

def rooms() -> dict:
    "Each module's number: the `NN` of the notebook that exports it."
    out = {}
    for nb in NBS.glob('[0-9]*.ipynb'):
        first = ''.join(json.loads(nb.read_text())['cells'][0]['source'])
        if (m := re.match(r'#\| *default_exp +(\w+)', first)): out[m.group(1)] = room_number(nb.name)
    return out

def upward(graph:dict, numbers:dict) -> list:
    "The edges that point up: a module importing one of the same or a higher number."
    return sorted((a, b) for a, deps in graph.items() for b in deps if numbers[b] >= numbers[a])

def private_imports(mods:dict) -> list:
    "(module, imported module, name) of every private name one module imports from another."
    return sorted((m, d, n) for m, s in mods.items() for d, names in imports(s) for n in names if n.startswith('_') and not n.startswith('__'))

def oversized(mods:dict, limit:int=MAX_LINES) -> dict:
    return {m: n for m, s in mods.items() if (n := len(s.splitlines())) > limit}

def shared_helpers(mods:dict) -> dict:
    "Private module-level names (functions, classes, constants, `@patch`ed methods) that more than one module defines."
    where = defaultdict(set)
    for m, s in mods.items():
        for node in ast.parse(s).body:
            names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else \
                    [t.id for t in getattr(node, 'targets', []) if isinstance(t, ast.Name)]
            for n in names:
                if n.startswith('_') and not n.startswith('__'): where[n].add(m)
    return {n: sorted(ms) for n, ms in where.items() if len(ms) > 1}

def test_every_import_points_down():
    numbers = rooms()
    assert set(numbers) == set(modules()), set(numbers) ^ set(modules())
    assert upward(import_graph(), numbers) == []

def test_the_check_finds_an_edge_pointing_up():
    "The negative control: the old edge manifest -> mlflow (a lower room knowing an upper one), put back, is found."
    graph = import_graph()
    graph['manifest'].add('mlflow')
    assert upward(graph, rooms()) == [('manifest', 'mlflow')]

def test_no_private_name_crosses_a_module():
    assert private_imports(modules()) == []

def test_the_check_finds_a_private_import():
    "The negative control: the old `from .manifest import _git, _patch_applies` of fastrepro.reproduce, put back, is found."
    mods = dict(modules(), reproduce=modules()['reproduce'] + '\nfrom .manifest import _git, _patch_applies\n')
    assert private_imports(mods) == [('reproduce', 'manifest', '_git'), ('reproduce', 'manifest', '_patch_applies')]

def test_no_module_is_over_about_500_lines():
    assert oversized(modules()) == {}
    assert oversized({'manifest': 'x\n' * 908}) == {'manifest': 908}  # the negative control: the old manifest.py

def test_one_helper_per_name():
    "`_short`, `_run` and `_finish` each meant three things once; a private name now belongs to one module."
    assert shared_helpers(modules()) == {}
    three = {m: 'def _short(v): return v\n' for m in ('diff', 'distributed', 'resume')}
    assert shared_helpers(three) == {'_short': ['diff', 'distributed', 'resume']}  # the negative control

MAX_WIDTH = 160  # fastai's style guide: lines of at most 160 characters

def long_lines(mods:dict) -> dict:
    "{module: [line number, ...]} of the lines over `MAX_WIDTH` characters."
    out = {m: [i for i, l in enumerate(s.splitlines(), 1) if len(l) > MAX_WIDTH] for m, s in mods.items()}
    return {m: ls for m, ls in out.items() if ls}

def test_no_generated_line_is_over_160_characters():
    "Issue 46: 72 lines were, the longest near 200 characters; `all.py` is held to it too."
    assert long_lines({**modules(), 'all': (SRC/'all.py').read_text()}) == {}
    assert long_lines({'callback': 'x = 1\n' + 'y' * 199 + '\n'}) == {'callback': [2]}  # the negative control
