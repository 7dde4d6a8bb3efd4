"""Render nbs/index.ipynb to README.md (Quarto, which nbdev-readme needs, cannot be installed here).

python tools/readme.py           write README.md
python tools/readme.py --check   exit 1 if README.md differs from what index.ipynb renders to
"""
import re, sys
from pathlib import Path
import nbformat
from nbconvert import MarkdownExporter

ROOT = Path(__file__).resolve().parents[1]

def render() -> str:
    nb = nbformat.read(ROOT/'nbs'/'index.ipynb', as_version=4)
    for cell in nb.cells:
        if cell.cell_type != 'code': continue
        cell.outputs = [o for o in cell.outputs if o.get('name') != 'stderr']  # dependencies' import-time warnings
        cell.source = re.sub(r'^#\|.*\n', '', cell.source, flags=re.M)  # nbdev directives, which the rendered docs hide too
    body, _ = MarkdownExporter(exclude_raw=True).from_notebook_node(nb)
    body = re.sub(r'<style.*?</style>\s*', '', body, flags=re.S)  # progress-bar and table CSS, noise on GitHub
    return re.sub(r'\n{3,}', '\n\n', body).strip() + '\n'

if __name__ == '__main__':
    readme, text = ROOT/'README.md', render()
    if '--check' in sys.argv[1:]:
        if not readme.exists() or readme.read_text() != text: sys.exit("README.md is out of date: run python tools/readme.py")
        print('README.md matches nbs/index.ipynb')
    else: readme.write_text(text); print(f'wrote {readme}')
