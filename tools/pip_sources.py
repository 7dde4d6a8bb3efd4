"""Print, one per line, the `uv pip install` options that give uv the package sources pip is configured with.

uv does not read pip's configuration (pip.conf, PIP_* variables), so on a machine whose pip looks in a local mirror, a
wheel folder or a constraints file, uv would resolve elsewhere or fail. `.ci/run` uses it as

    sources=$(python tools/pip_sources.py); mapfile -t sources <<< "$sources"
    uv pip install "${sources[@]}" -e ".[dev]"

It prints nothing where pip has no such configuration. One difference stays: where several indexes hold a package, uv
takes it from the first that does (here the machine's mirror), and pip the newest version of all.
"""
import ast, subprocess, sys

OPTIONS = {'index-url': '--index-url', 'extra-index-url': '--extra-index-url', 'find-links': '--find-links',
           'constraint': '--constraint'}
ORDER = (':env:', 'install', 'global')  # pip's precedence, highest first: PIP_* variables, then the [install] and [global] sections

def pip_config() -> dict:
    "`pip config list` as {(section, name): value}, e.g. {('global', 'find-links'): '/opt/wheels'}."
    out = subprocess.run([sys.executable, '-m', 'pip', 'config', 'list'], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        key, sep, value = line.partition('=')
        if not sep or '.' not in key: continue
        section, name = key.rsplit('.', 1)
        found[section, name] = ast.literal_eval(value)  # pip prints each value as a Python string literal
    return found

def uv_options(config:dict) -> list:
    "uv's options for the sources in `config`, each taken from where pip itself would read it."
    def get(name): return next((config[s, name] for s in ORDER if (s, name) in config), '')
    args = [a for name, option in OPTIONS.items() for v in get(name).split() for a in (option, v)]
    return args + (['--no-index'] if get('no-index').lower() in ('1', 'true', 'yes', 'on') else [])

if __name__ == '__main__': print('\n'.join(uv_options(pip_config())))
