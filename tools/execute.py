"""Run notebooks and save their outputs as a Jupyter kernel shows them (HTML tables and progress bars), without Jupyter.

    python tools/execute.py nbs/18_sweep.ipynb [...]      then nbdev-clean

`nbdev-test --save` saves outputs too, but in its shell fastprogress and fastai believe they are not in a notebook (they
read `IN_NOTEBOOK` once, when imported, before any shell exists), so progress bars and tables come out as console text.
Cells skipped by nbdev-test (`#| notest`, `#| eval: false`, ...) are skipped here too, and keep the outputs they had.
A progress bar's updates, which Jupyter draws in place, are kept as their last state.
"""
import json, sys
from pathlib import Path
import fastcore.imports, fastcore.utils
fastcore.imports.IN_NOTEBOOK = fastcore.utils.IN_NOTEBOOK = True  # before fastprogress and fastai import it
from nbdev.test import test_nb
from nbdev.config import get_config

def _html(o) -> str: return ''.join(o.get('data', {}).get('text/html', ''))
def _bar(o) -> bool: return '<progress' in _html(o)
def _update(o) -> bool: return _bar(o) or (o.get('output_type') == 'display_data' and 'text/html' in o.get('data', {}) and not _html(o).strip())

def last_bar_states(fn):
    "Keep only the last of each run of progress-bar updates (a bar that ends empty was removed), as Jupyter shows them."
    nb = json.loads(Path(fn).read_text())
    for c in nb['cells']:
        outs = c.get('outputs') or []
        c['outputs'] = [o for i, o in enumerate(outs) if not (_bar(o) and i + 1 < len(outs) and _update(outs[i + 1]))]
    Path(fn).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n')

if __name__ == '__main__':
    flags = get_config().tst_flags.split()
    for fn in sys.argv[1:]:
        ok, secs = test_nb(Path(fn).resolve(), skip_flags=flags, save=True)  # it saves from inside the notebook's folder
        print(f"{fn}: {'saved' if ok else 'FAILED, not saved'} ({secs:.0f} s)")
        if not ok: sys.exit(1)
        last_bar_states(fn)
