"""Build the docs site from the notebooks without Quarto, and check it in a real browser.

python tools/docs.py            process nbs/ the nbdev way into _proc/, then build the site into _docs/ with mkdocs-material
python tools/docs.py --check    load every page of _docs/ in headless Chromium; exit 1 if a page, link, anchor,
                                image or show_doc section is broken; exit 2 if Chromium cannot be found

With Quarto installed, `nbdev-docs` builds the same pages from the same `_proc/` (nbs/_quarto.yml, nbs/sidebar.yml).
Here nbdev's own processing (`nbdev.serve.proc_nbs`: directives, show_doc, doc links) is kept; only its last step,
Quarto's render, is replaced: each processed notebook becomes a Markdown page (nbconvert), and mkdocs-material builds
the site, with the sidebar in nbdev's `sidebar.yml` order.
"""
from __future__ import annotations
import argparse, functools, http.server, inspect, json, re, shutil, sys, tempfile, threading, time
from pathlib import Path
import nbformat, yaml
from nbconvert import MarkdownExporter

ROOT = Path(__file__).resolve().parents[1]
NBS, PROC, SITE = ROOT/'nbs', ROOT/'_proc', ROOT/'_docs'
PAGES = PROC/'_mkdocs'  # the Markdown pages and mkdocs.yml, made from _proc/
CHROMIUM = '/usr/bin/chromium'

# ---------------------------------------------------------------- processing, the nbdev way

def process_notebooks(n_workers=2) -> Path:
    "What `nbdev-docs` does before Quarto renders: refresh the Quarto config and sidebar, then `proc_nbs` into _proc/."
    from nbdev.quarto import refresh_quarto_yml, nbdev_sidebar
    from nbdev.serve import proc_nbs
    refresh_quarto_yml()
    nbdev_sidebar.__wrapped__(path=NBS)
    return proc_nbs(NBS, n_workers=n_workers)  # `nbdev-proc-nbs` would first try to install Quarto

def sidebar(nbs=NBS) -> list[str]:
    "The notebooks, in the order of nbdev's `sidebar.yml`."
    return yaml.safe_load((nbs/'sidebar.yml').read_text())['website']['sidebar']['contents']

# ---------------------------------------------------------------- Quarto markup to mkdocs Markdown

_CALLOUT = re.compile(r'^:::+\s*\{\.callout-(\w+)[^}]*\}\s*\n(.*?)^:::+\s*$', re.M | re.S)

def callouts(md:str) -> str:
    "Quarto's `::: {.callout-note}` blocks as mkdocs admonitions (`!!! note`)."
    def admonition(m):
        kind, body = m.group(1), m.group(2).strip('\n')
        title = re.match(r'^##+\s+(.*)\n', body)
        if title: body = body[title.end():]
        head = f'!!! {kind}' + (f' "{title.group(1)}"' if title else '')
        return head + '\n' + ''.join(f'    {l}\n' if l.strip() else '\n' for l in body.splitlines()) + '\n'
    return _CALLOUT.sub(admonition, md)

def local_links(md:str, doc_url:str) -> str:
    """nbdev links pages by their absolute URL (`.../callback.html#reprocallback`); on this site they are relative `.md` links,
    and a method's anchor (`#streamkeys.skip_batches`) is mkdocs' slug of its heading, without the dot."""
    pat = re.escape(doc_url.rstrip('/') + '/') + r'([\w.-]+)\.html(#[\w.-]+)?'
    return re.sub(pat, lambda m: f"{m.group(1)}.md" + (m.group(2) or '').replace('.', ''), md)

def quarto_to_mkdocs(md:str, doc_url:str) -> str:
    "Markdown from nbdev's processing, as mkdocs-material reads it. `{target=...}` link attributes need `attr_list`."
    return callouts(local_links(md, doc_url))

# ---------------------------------------------------------------- processed notebook to page

def directives(src:str) -> tuple[dict, str]:
    "Quarto's `#| key: value` lines at the top of a cell, and the code without them."
    opts, lines = {}, src.splitlines()
    while lines and lines[0].startswith('#|'):
        k, _, v = lines.pop(0)[2:].partition(':')
        opts[k.strip()] = v.strip()
    return opts, '\n'.join(lines)

def frontmatter(nb) -> dict:
    "The YAML frontmatter nbdev puts in the first raw cell (title, description, output-file)."
    first = nb.cells[0] if nb.cells else None
    if first is None or first.cell_type != 'raw': return {}
    return yaml.safe_load(first.source.strip().strip('-')) or {}

def page_cells(nb, doc_url:str):
    "The cells as Quarto would show them: `echo: false` hides the code, `output: asis` shows Markdown as Markdown."
    fm = frontmatter(nb)
    head = f"# {fm.get('title', '')}\n\n" + (f"> {fm['description']}\n" if fm.get('description') else '')
    cells = [nbformat.v4.new_markdown_cell(head)]
    for cell in nb.cells[1 if fm else 0:]:
        if cell.cell_type == 'markdown':
            cell.source = quarto_to_mkdocs(cell.source, doc_url)
            cells.append(cell); continue
        if cell.cell_type != 'code': continue
        cell.metadata.pop('execution', None)  # nbdev's timings, which nbformat's schema rejects
        opts, cell.source = directives(cell.source)
        if opts.get('include') == 'false': continue
        cell.outputs = [o for o in cell.outputs if o.get('name') != 'stderr']  # import-time warnings are not docs
        if opts.get('output') == 'false': cell.outputs = []
        if opts.get('output') == 'asis':
            md = ''.join(o.get('data', {}).get('text/markdown', '') for o in cell.outputs)
            cells.append(nbformat.v4.new_markdown_cell(quarto_to_mkdocs(md, doc_url))); continue
        if opts.get('echo') == 'false': cell.metadata.setdefault('transient', {})['remove_source'] = True
        for o in cell.outputs:
            if 'text/markdown' in o.get('data', {}): o.data['text/markdown'] = quarto_to_mkdocs(o.data['text/markdown'], doc_url)
        cells.append(cell)
    nb.cells = cells
    return nb, fm

def write_page(proc_nb:Path, pages:Path, doc_url:str) -> tuple[str, str]:
    "Write one processed notebook as `<output-file>.md`, with its plots beside it. Returns (page file, title)."
    nb, fm = page_cells(nbformat.read(proc_nb, as_version=4), doc_url)
    stem = Path(fm.get('output-file', proc_nb.stem + '.html')).stem
    body, res = MarkdownExporter().from_notebook_node(nb, resources={'output_files_dir': f'{stem}_files'})
    for name, data in res.get('outputs', {}).items():
        (pages/name).parent.mkdir(parents=True, exist_ok=True)
        (pages/name).write_bytes(data)
    (pages/f'{stem}.md').write_text(body)
    return f'{stem}.md', fm.get('title', stem)

# ---------------------------------------------------------------- the site

def mkdocs_config(nav, cfg) -> dict:
    return {
        'site_name': cfg.title, 'site_description': cfg.description, 'site_url': cfg.doc_url,
        'docs_dir': str(PAGES/'docs'), 'site_dir': str(SITE), 'use_directory_urls': False,
        'nav': nav,
        'theme': {'name': 'material', 'font': False,  # no Google Fonts: the site works offline
                  'features': ['navigation.sections', 'content.code.copy', 'toc.follow']},
        'extra_css': ['styles.css'],
        'markdown_extensions': ['tables', 'attr_list', 'md_in_html', 'admonition', 'pymdownx.details',
                                {'toc': {'permalink': True}}, 'pymdownx.superfences',
                                {'pymdownx.highlight': {'use_pygments': True}}],
        'plugins': ['search'],
        'validation': {'links': {'anchors': 'warn'}},
    }

def build(n_workers=2) -> Path:
    "Process the notebooks and build the site into _docs/."
    from nbdev.config import get_config
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    t0, cfg = time.time(), get_config()
    process_notebooks(n_workers)
    shutil.rmtree(PAGES, ignore_errors=True); (PAGES/'docs').mkdir(parents=True)
    nav = []
    for name in sidebar():
        page, title = write_page(PROC/name, PAGES/'docs', cfg.doc_url)
        nav.append({re.sub(r'`', '', title): page})
    shutil.copy(NBS/'styles.css', PAGES/'docs'/'styles.css')
    (PAGES/'mkdocs.yml').write_text(yaml.safe_dump(mkdocs_config(nav, cfg), sort_keys=False))
    shutil.rmtree(SITE, ignore_errors=True)
    mkdocs_build(load_config(str(PAGES/'mkdocs.yml')))
    print(f'built {len(nav)} pages into {SITE.relative_to(ROOT)}/ in {time.time()-t0:.0f} s')
    return SITE

# ---------------------------------------------------------------- the browser check

def public_names() -> dict:
    "Each module's page and the names of its `__all__`, which the page documents: {'seed.html': (functions and classes, constants)}."
    import importlib
    from nbdev.config import get_config
    out = {}
    for nb in sorted(Path(get_config().nbs_path).glob('[0-9]*.ipynb')):
        first = ''.join(json.loads(nb.read_text())['cells'][0]['source'])
        if not (m := re.match(r'#\| *default_exp +(\w+)', first)): continue
        mod = importlib.import_module(f'fastrepro.{m.group(1)}')
        objs = {n: getattr(mod, n) for n in mod.__all__}
        out[f'{m.group(1)}.html'] = (sorted(n for n, o in objs.items() if callable(o)), sorted(n for n, o in objs.items() if not callable(o)))
    return out

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass

def serve(site:Path, baseurl:str):
    "Serve `site` on a free localhost port under `baseurl`, as GitHub Pages does (pages use fetch and workers, which file:// URLs do not allow)."
    root = Path(tempfile.mkdtemp())
    (root/baseurl.strip('/')).symlink_to(site.resolve(), target_is_directory=True)
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f'http://127.0.0.1:{srv.server_address[1]}/{baseurl.strip("/")}/'

_PAGE_JS = """() => ({
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  images: [...document.images].map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0})),
  headings: [...document.querySelectorAll('article h2, article h3, article h4')].map(h => [
    h.textContent.replace('¶', '').trim(), (h.nextElementSibling || {}).textContent || '']),
  code: [...document.querySelectorAll('article code')].map(c => c.textContent.trim()),
})"""

def browse(site:Path, screenshot:Path|None=None, chromium=CHROMIUM, baseurl='/fastrepro') -> dict:
    "Load every page of `site` in headless Chromium; return what each page showed and every error it raised."
    from playwright.sync_api import sync_playwright
    srv, base = serve(site, baseurl)
    pages, errors = {}, []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=[
                '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
                '--disable-component-update', '--disable-sync'])
            tab = browser.new_page(viewport={'width': 1280, 'height': 900})
            current = {}
            tab.on('console', lambda m: m.type == 'error' and errors.append((current['page'], f'console: {m.text}')))
            tab.on('pageerror', lambda e: errors.append((current['page'], f'script error: {e}')))
            tab.on('response', lambda r: r.status >= 400 and r.url.startswith(base)
                   and errors.append((current['page'], f'HTTP {r.status}: {r.url[len(base):]}')))
            tab.on('requestfailed', lambda r: r.url.startswith(base)
                   and errors.append((current['page'], f'request failed: {r.url[len(base):]}')))
            for html in sorted(site.rglob('*.html')):
                rel = html.relative_to(site).as_posix()
                current['page'] = rel
                tab.goto(base + rel, wait_until='networkidle')
                pages[rel] = tab.evaluate(_PAGE_JS)
                if rel == 'index.html' and screenshot: tab.screenshot(path=str(screenshot), full_page=False)
            browser.close()
    finally: srv.shutdown()
    return dict(base=base, pages=pages, errors=errors)

def problems(seen:dict, names:dict, site=SITE) -> list[str]:
    "Everything wrong with a browsed site: errors, broken links and anchors, images that did not load, undocumented names."
    base, pages = seen['base'], seen['pages']
    out = [f'{page}: {err}' for page, err in seen['errors']]
    for page, info in pages.items():
        for img in info['images']:
            if not img['ok']: out.append(f'{page}: image did not load: {img["src"]}')
        for href in info['links']:
            if not href.startswith(base): continue  # external: not reachable from here
            target, _, anchor = href[len(base):].partition('#')
            target = target or page
            if target.endswith('/'): target += 'index.html'
            if target not in pages and not (site/target).exists(): out.append(f'{page}: broken link to {target}')
            elif anchor and target in pages and anchor not in pages[target]['ids']:
                out.append(f'{page}: broken anchor {target}#{anchor}')
    def show_doc_of(name, text, signature):  # nbdev's show_doc: a heading, then the signature
        return text == name and re.search(rf'\b(class\s+)?{re.escape(name)}\s*[(:]', signature)
    for page, (callables, constants) in names.items():  # each module's names, on its own page
        info = pages.get(page) or dict(headings=[], code=[])
        for name in callables:
            if not any(show_doc_of(name, *h) for h in info['headings']): out.append(f'{page}: no show_doc section for {name}')
        for name in constants:
            if name not in info['code']: out.append(f'{page}: constant {name} is not mentioned')
    return out

def check(site=SITE, screenshot=PROC/'index.png', chromium=CHROMIUM) -> list[str]:
    "Browse the built site and return its problems (an empty list: all good)."
    if not (site/'index.html').exists(): return [f'no site in {site}: run python tools/docs.py first']
    from nbdev.config import get_config
    seen = browse(site, screenshot, chromium, get_config().doc_baseurl)
    return problems(seen, public_names(), site=site)

def main(argv=None):
    ap = argparse.ArgumentParser(description=inspect.getdoc(sys.modules[__name__]).splitlines()[0])
    ap.add_argument('--check', action='store_true', help='check the built site in headless Chromium')
    ap.add_argument('--chromium', default=CHROMIUM, help='the Chromium binary (Debian package `chromium`)')
    args = ap.parse_args(argv)
    if not args.check:
        build(); return 0
    if not Path(args.chromium).exists():
        print(f'cannot check the site: no Chromium at {args.chromium} (install Debian\'s `chromium` package)', file=sys.stderr)
        return 2
    t0, found = time.time(), check(chromium=args.chromium)
    for p in found: print('FAIL', p)
    n = len(list(SITE.rglob('*.html')))
    print(f'{n} pages checked in {time.time()-t0:.0f} s: ' + (f'{len(found)} problems' if found else 'no problems')
          + f'; screenshot of the index: {(PROC/"index.png").relative_to(ROOT)}')
    return 1 if found else 0

if __name__ == '__main__': sys.exit(main())
