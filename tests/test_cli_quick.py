"""The CLI is quick and quiet (issue 23, point 7): `--help`, `show`, `diff`, `runs` and `sweep show` read JSON, so they import
neither torch nor fastai and print nothing on stderr. Their times are `python bench/cli_speed.py`'s to print, not a test's."""
import json, subprocess, sys
import pytest
from fastrepro.manifest import new_manifest, finish_manifest, write_manifest
from fastrepro.sweep import Sweep
from helpers import HANG_S

PROBE = """import sys
from fastrepro.cli import main
try: rc = main(sys.argv[1:])
except SystemExit as e: rc = e.code
print('IMPORTED', [m for m in ('torch', 'fastai') if m in sys.modules])
sys.exit(rc)"""

def probe(*args):
    "Run the CLI in a fresh interpreter; its exit code, stderr, and which of torch and fastai it imported."
    r = subprocess.run([sys.executable, '-c', PROBE, *map(str, args)], capture_output=True, text=True, timeout=HANG_S)
    return r.returncode, r.stderr, r.stdout.strip().splitlines()[-1]

@pytest.fixture(scope='module')
def files(tmp_path_factory):
    runs = tmp_path_factory.mktemp('quick')/'runs'
    a, b = (write_manifest(finish_manifest(new_manifest(seed=s)), runs) for s in (1, 2))
    sweep = Sweep('s', [0, 1], {i: dict(status='completed', metric_names=['accuracy'], epochs=[[x]], weights_sha256='-')
                                for i, x in enumerate((.9, .91))}, path=runs.parent/'sweeps'/'s').save().parent
    return a, b, runs, sweep

@pytest.mark.parametrize('cmd', ['--help', 'show', 'diff', 'runs', 'sweep show'])
def test_reading_commands_import_neither_torch_nor_fastai(files, cmd):
    a, b, runs, sweep = files
    args = {'--help': ['--help'], 'show': ['show', a], 'diff': ['diff', a, b], 'runs': ['runs', runs], 'sweep show': ['sweep', 'show', sweep]}[cmd]
    rc, err, imported = probe(*args)
    assert rc in (0, 1) and err == '' and imported == 'IMPORTED []', (rc, err, imported)

def test_the_probe_sees_torch_where_a_command_needs_it(files):
    "The negative control: `check-env` asks torch for this process's CUDA and cuDNN, and the same probe reports it."
    rc, err, imported = probe('check-env', files[0])
    assert imported == "IMPORTED ['torch']", (rc, err, imported)
