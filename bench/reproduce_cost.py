"""What reproducing costs on top of training (issue 24), measured on the digits in a scratch repository.

    python bench/reproduce_cost.py [--pairs 3]

1. Recording: `code_info` (git status, the entry, and on a dirty tree the patch, its apply check and the untracked files),
   the part of a fit's manifest this issue added, per fit: the median of 50 calls, on a clean tree and on a dirty one.
2. A drill's overhead: `fastrepro reproduce RUN` (a fresh CLI process: preflight, worktree, rerun, verdict) against the
   same training script run plainly (`python train.py`), pair by pair; its preflight as the report gives it.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

TRAIN = '''import sys
from fastai.vision.all import accuracy
from fastrepro.all import repro_learner, digits_dblock, digits_cnn
learn = repro_learner(digits_dblock(), sys.argv[1], seed=42, model=digits_cnn, num_workers=0, metrics=accuracy)
learn.fit_one_cycle(1, 1e-2)
'''

def git(repo, *a): subprocess.run(['git', '-c', 'user.email=b@fastrepro.dev', '-c', 'user.name=b', *a], cwd=repo, check=True, capture_output=True)

def recording_ms(repo:Path, n=50) -> float:
    from fastrepro.capture import code_info
    code_info(cwd=repo)  # the first call asks git for the top folder, the remote and the remote branches, once per commit
    times = []
    for _ in range(n):
        t = time.perf_counter(); code_info(cwd=repo); times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3

def timed(cmd, **kw) -> tuple:
    t = time.perf_counter(); p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode not in (0,): sys.exit(f"{cmd} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return time.perf_counter() - t, p.stdout

def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0]); a.add_argument('--pairs', type=int, default=3); args = a.parse_args()
    from fastrepro.examples import digits_path
    tmp = Path(tempfile.mkdtemp(prefix='fastrepro-bench-reproduce-'))
    data, repo, runs = digits_path(tmp/'digits'), tmp/'repo', tmp/'runs'
    repo.mkdir(); (repo/'train.py').write_text(TRAIN); git(repo, 'init', '-q'); git(repo, 'add', '.'); git(repo, 'commit', '-qm', 'bench')
    clean = recording_ms(repo)
    (repo/'train.py').write_text(TRAIN.replace('1e-2', '2e-2')); (repo/'helpers.py').write_text('x = 1\n')
    dirty = recording_ms(repo)
    print(f"recording the entry and the code, per fit (median of 50): clean tree {clean:.1f} ms, dirty tree {dirty:.1f} ms")
    env = {k: v for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'}
    env.update(FASTREPRO_RUNS=str(runs), OMP_NUM_THREADS=env.get('OMP_NUM_THREADS', '1'))
    timed([sys.executable, 'train.py', str(data)], cwd=repo, env=env)
    [record] = runs.glob('*.json')
    fastrepro = str(Path(sys.executable).with_name('fastrepro'))
    plain, repro, pre = [], [], []
    for _ in range(args.pairs):
        plain.append(timed([sys.executable, 'train.py', str(data)], cwd=repo, env=dict(env, FASTREPRO_RUNS=str(tmp/'scratch-runs')))[0])
        t, out = timed([fastrepro, 'reproduce', str(record), '--json'], env=env)
        rep = json.loads(out); assert rep['verdict'] == 'bitwise', rep
        repro.append(t); pre.append(rep['seconds']['preflight'])
    over = [r - p for r, p in zip(repro, plain)]
    print(f"plain run {statistics.median(plain):.1f} s, `fastrepro reproduce` {statistics.median(repro):.1f} s (median of {args.pairs} pairs): "
          f"overhead {statistics.median(over):.1f} s (pairs: {', '.join(f'{o:.1f}' for o in over)}); its preflight {statistics.median(pre):.2f} s")

if __name__ == '__main__': main()
