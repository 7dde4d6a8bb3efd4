"""How long `fastrepro` commands take from a shell, against the bare interpreter and against `import torch`, measured in the
same run. The reading commands should cost little more than the interpreter. Prints figures only.

Run: python bench/cli_speed.py [--reps 7]
"""
import argparse, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path
from fastrepro.manifest import new_manifest, finish_manifest, write_manifest
from fastrepro.sweep import Sweep

def timed(cmd) -> tuple:
    t = time.perf_counter(); r = subprocess.run(cmd, capture_output=True, text=True); return time.perf_counter() - t, r

def main(reps=7):
    tmp = Path(tempfile.mkdtemp(prefix='cli-speed-'))
    a, b = (write_manifest(finish_manifest(new_manifest(seed=s)), tmp/'runs') for s in (1, 2))
    sweep = Sweep('s', [0, 1], {i: dict(status='completed', metric_names=['accuracy'], epochs=[[x]], weights_sha256='-')
                                for i, x in enumerate((.9, .91))}, path=tmp/'sweeps'/'s').save().parent
    cli = str(Path(sys.executable).parent/'fastrepro')
    cases = {'python -c pass': [sys.executable, '-c', 'pass'], 'fastrepro --help': [cli, '--help'],
             'fastrepro show': [cli, 'show', str(a)], 'fastrepro diff': [cli, 'diff', str(a), str(b)],
             'fastrepro runs': [cli, 'runs', str(tmp/'runs')], 'fastrepro sweep show': [cli, 'sweep', 'show', str(sweep)],
             'fastrepro check-env': [cli, 'check-env', str(a)], 'python -c "import torch"': [sys.executable, '-c', 'import torch']}
    base = None
    for name, cmd in cases.items():
        runs = [timed(cmd) for _ in range(reps)]
        t, r = statistics.median(x for x, _ in runs), runs[-1][1]
        base = base or t
        print(f"{name:28s} {t*1e3:7.0f} ms  {t/base:5.1f}x the interpreter   exit {r.returncode}, stderr {len(r.stderr)} chars")

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0]); p.add_argument('--reps', type=int, default=7)
    main(**vars(p.parse_args()))
