"""No lower layer knows an upper one (issue 23, point 6): the graph of imports between fastrepro's modules, counting
the imports inside functions, has no cycle. `fastrepro.manifest` once imported `fastrepro.mlflow` to read `runs:/` URIs;
now `mlflow` registers its scheme with `manifest.register_scheme`."""
import ast
from pathlib import Path
import fastrepro

SRC = Path(fastrepro.__file__).parent

def import_graph(src:Path=SRC) -> dict:
    "Each module of the package, and the package's modules it imports anywhere in its code (a function's body too)."
    graph = {}
    for f in sorted(src.glob('*.py')):
        if f.stem in ('_modidx', 'all', '__init__'): continue
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module: deps.add(node.module.split('.')[0])
            elif isinstance(node, ast.ImportFrom) and (node.module or '').startswith('fastrepro.'): deps.add(node.module.split('.')[1])
            elif isinstance(node, ast.Import): deps |= {a.name.split('.')[1] for a in node.names if a.name.startswith('fastrepro.')}
        graph[f.stem] = deps - {f.stem}
    return graph

def find_cycle(graph:dict) -> list|None:
    "A cycle of `graph`, as the list of its modules, or None."
    state, path = {}, []
    def visit(n):
        state[n] = 'open'; path.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 'open': return path[path.index(d):] + [d]
            if d not in state and (c := visit(d)): return c
        state[n] = 'done'; path.pop()
    for n in sorted(graph):
        if n not in state and (c := visit(n)): return c
    return None

def test_the_module_graph_has_no_cycle():
    graph = import_graph()
    assert 'mlflow' not in graph['manifest'] and 'manifest' in graph['mlflow']
    assert find_cycle(graph) is None, find_cycle(graph)

def test_the_check_finds_a_cycle():
    "The negative control: the old edge manifest -> mlflow, put back, is found."
    graph = import_graph()
    graph['manifest'].add('mlflow')
    assert find_cycle(graph) in (['manifest', 'mlflow', 'manifest'], ['mlflow', 'manifest', 'mlflow'])
