"The docs site: built from the notebooks the nbdev way (tools/docs.py), and checked in headless Chromium."
import importlib.util, re, shutil, sys
from pathlib import Path
import nbformat, pytest, yaml

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location('docs', ROOT/'tools'/'docs.py')
docs = importlib.util.module_from_spec(spec); sys.modules['docs'] = docs; spec.loader.exec_module(docs)

needs_chromium = pytest.mark.skipif(not Path(docs.CHROMIUM).exists(),
    reason=f"SKIPPED, NOT PASSED: no Chromium at {docs.CHROMIUM}, so the docs site was not checked in a browser "
           "(install Debian's `chromium`; .ci/run does)")

# ---------------------------------------------------------------- the conversion of Quarto markup (fast)

def test_quarto_callout_becomes_admonition():
    md = "Before.\n\n::: {.callout-warning}\n## Careful\nA fit *counts* once.\n\nTwice.\n:::\n\nAfter."
    out = docs.callouts(md)
    assert '!!! warning "Careful"\n    A fit *counts* once.\n\n    Twice.\n' in out
    assert out.startswith('Before.') and out.rstrip().endswith('After.') and ':::' not in out

def test_doc_links_become_relative_pages():
    md = '[`key`](https://fastrepro.github.io/fastrepro/seed.html#key) and [fastai](https://docs.fast.ai/x.html)'
    assert docs.local_links(md, 'https://fastrepro.github.io/fastrepro/') == \
        '[`key`](seed.md#key) and [fastai](https://docs.fast.ai/x.html)'
    assert docs.local_links('[`StreamKeys.skip_batches`](https://fastrepro.github.io/fastrepro/data.html#streamkeys.skip_batches)',
                            'https://fastrepro.github.io/fastrepro/') == '[`StreamKeys.skip_batches`](data.md#streamkeysskip_batches)'

def test_directives_hide_code_and_render_asis():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_raw_cell("---\ntitle: Seeds\ndescription: Keys\noutput-file: seed.html\n---"),
        nbformat.v4.new_code_cell("#| echo: false\n#| output: asis\nshow_doc(key)", outputs=[nbformat.v4.new_output(
            'execute_result', data={'text/markdown': '### key\n', 'text/plain': '<>'}, execution_count=1)]),
        nbformat.v4.new_code_cell("#| echo: false\nprint(1)", outputs=[nbformat.v4.new_output('stream', name='stdout', text='1\n')]),
        nbformat.v4.new_code_cell("#| include: false\nsecret()"),
        nbformat.v4.new_code_cell("x = 1  # shown"),
    ])
    page, fm = docs.page_cells(nb, 'https://fastrepro.github.io/fastrepro/')
    assert fm['output-file'] == 'seed.html'
    kinds = [(c.cell_type, c.source) for c in page.cells]
    assert kinds[0] == ('markdown', '# Seeds\n\n> Keys\n') and kinds[1] == ('markdown', '### key\n')
    assert page.cells[2].metadata['transient']['remove_source'] and kinds[3] == ('code', 'x = 1  # shown')
    assert 'secret' not in str(kinds)

# ---------------------------------------------------------------- the built site (slow: processes every notebook)

@pytest.fixture(scope='module')
def site():
    return docs.build()

@pytest.mark.slow
def test_pages_follow_the_sidebar_and_hide_what_nbdev_hides(site):
    cfg = yaml.safe_load((docs.PAGES/'mkdocs.yml').read_text())
    nbs = docs.sidebar()
    assert len(cfg['nav']) == len(nbs) == len(list((ROOT/'nbs').glob('*.ipynb')))
    titles = [list(p)[0] for p in cfg['nav']]
    assert titles[0] == 'fastrepro' and 'ReproCallback' in titles and 'The fastrepro command' in titles
    html = (site/'data.html').read_text()
    assert 'from fastcore.test import *' not in html  # a `#| hide` cell
    assert 'class StreamKeys' not in html and 'id="streamkeys"' in html  # `#| export`: its show_doc, not its code
    assert list(site.glob('*_files/*.png')), 'the plots are images on the pages'

@pytest.mark.slow
@needs_chromium
def test_every_page_passes_the_browser_check(site, tmp_path):
    found = docs.check(site, screenshot=tmp_path/'index.png')
    assert found == [], '\n'.join(found)
    assert (tmp_path/'index.png').stat().st_size > 10_000

@pytest.mark.slow
@needs_chromium
def test_the_check_catches_broken_links_anchors_images_and_missing_show_docs(site, tmp_path):
    "Negative control: the same site, broken on purpose in four ways, fails the check on each."
    broken = tmp_path/'site'
    shutil.copytree(site, broken)
    page = broken/'seed.html'
    html = page.read_text()
    html = html.replace('<article class="md-content__inner md-typeset">', '<article class="md-content__inner md-typeset">'
        '<a href="no-such-page.html">x</a><a href="callback.html#no-such-anchor">y</a><img src="seed_files/missing.png">', 1)
    page.write_text(html)
    cb = broken/'callback.html'
    cb.write_text(re.sub(r'<h3 id="canonical_state">.*?</h3>', '', cb.read_text(), count=1, flags=re.S))
    seen = docs.browse(broken, chromium=docs.CHROMIUM)
    found = docs.problems(seen, docs.public_names(), site=broken)
    assert any('broken link to no-such-page.html' in p for p in found), found
    assert any('broken anchor callback.html#no-such-anchor' in p for p in found), found
    assert any('image did not load' in p and 'missing.png' in p for p in found), found
    assert 'callback.html: no show_doc section for canonical_state' in found, found
    assert any('HTTP 404' in p for p in found), found

def _cellstats():
    spec = importlib.util.spec_from_file_location('cellstats', ROOT/'tools'/'cellstats.py')
    cs = importlib.util.module_from_spec(spec); spec.loader.exec_module(cs)
    return cs

def test_definitions_are_followed_by_examples():
    "fastcore's rhythm: at most 5 exported cells that define names in a row, before a cell that uses one of them."
    cs = _cellstats()
    long = {nb.name: run for nb in sorted((ROOT/'nbs').glob('*.ipynb')) if (run := cs.longest_unused_run(nb))[0] > cs.MAX_UNUSED_RUN}
    assert long == {}, f"(exported cells in a row, the first one's index): {long}"

def test_the_rhythm_check_finds_a_long_run():
    "The negative control: six definitions before their first use are one run of six; a use in between cuts it."
    code = lambda src: nbformat.v4.new_code_cell(src)
    defs = lambda a, b: [code(f'#| export\ndef f{i}(): pass') for i in range(a, b)]
    cs = _cellstats()
    assert cs.unused_runs([code('#| export\nimport os')] + defs(0, 6) + [code('f0()')]) == [(6, 1)]
    assert cs.unused_runs(defs(0, 3) + [code('f1()')] + defs(3, 6) + [nbformat.v4.new_markdown_cell('f4')] + [code('x = f4()')]) == [(3, 0), (3, 4)]
    assert cs.unused_runs(defs(0, 3) + [code('print(1)')] + defs(3, 6)) == [(6, 0)]  # a cell that uses none of them does not count

def test_cells_stay_small():
    "Each notebook's code cells: median <= 5 lines, p90 <= 15, as fastcore's and execnb's are."
    spec = importlib.util.spec_from_file_location('cellstats', ROOT/'tools'/'cellstats.py')
    cs = importlib.util.module_from_spec(spec); spec.loader.exec_module(cs)
    big = {nb: s for nb, s in cs.stats(ROOT/'nbs').items() if s[1] > 5 or s[2] > 15}
    assert big == {}, big
