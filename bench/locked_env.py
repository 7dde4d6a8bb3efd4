"""How long `reproduce --env locked` takes to get its venv (issue 24), for a digits run recorded in a scratch repository.

    python bench/locked_env.py

It writes the run's lock (`fastrepro lock`), then builds the venv from it three times, each in a fresh process:
- cold: an empty uv cache (`UV_CACHE_DIR` in a temporary folder), so every wheel is fetched from the package index;
- warm: the uv cache the cold build filled, and no venv cached yet (another `FASTREPRO_CACHE`);
- cached: the venv the warm build made, found by the lock's hash.
Run it from a clean checkout of fastrepro: `lock` refuses a checkout with changes the run did not record. The cold build
fetches every package (torch and its CUDA libraries too, several GB), so it needs the disk space and the index's bandwidth.
"""
import shutil, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from reproduce_cost import TRAIN, git

BUILD = "import sys; from fastrepro.lock import locked_python; print(locked_python(sys.argv[1]))"

def build_s(lock_dir:Path, uv_cache:Path, fastrepro_cache:Path) -> float:
    import os
    env = dict(os.environ, UV_CACHE_DIR=str(uv_cache), FASTREPRO_CACHE=str(fastrepro_cache))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, '-c', BUILD, str(lock_dir)], env=env, capture_output=True, text=True)
    if p.returncode != 0: sys.exit(f"the venv build failed:\n{p.stderr[-3000:]}")
    return time.perf_counter() - t

def main():
    import os
    from fastrepro.examples import digits_path
    from fastrepro.lock import lock_run
    tmp = Path(tempfile.mkdtemp(prefix='fastrepro-bench-locked-'))
    try:
        data, repo, runs = digits_path(tmp/'digits'), tmp/'repo', tmp/'runs'
        repo.mkdir(); (repo/'train.py').write_text(TRAIN); git(repo, 'init', '-q'); git(repo, 'add', '.'); git(repo, 'commit', '-qm', 'bench')
        env = {k: v for k, v in os.environ.items() if k != 'PYTEST_CURRENT_TEST'}
        subprocess.run([sys.executable, 'train.py', str(data)], cwd=repo, env=dict(env, FASTREPRO_RUNS=str(runs), OMP_NUM_THREADS='1'), check=True, capture_output=True)
        [record] = runs.glob('*.json')
        t = time.perf_counter(); lock_run(record, tmp/'lock'); lock_s = time.perf_counter() - t
        n = sum(1 for l in (tmp/'lock'/'requirements.lock.txt').read_text().splitlines() if l and not l[0] in ' #-')
        cold = build_s(tmp/'lock', tmp/'uv-cache', tmp/'fastrepro-cold')
        warm = build_s(tmp/'lock', tmp/'uv-cache', tmp/'fastrepro-warm')
        cached = build_s(tmp/'lock', tmp/'uv-cache', tmp/'fastrepro-warm')
        print(f"lock written in {lock_s:.1f} s ({n} pinned packages); venv from the lock: cold {cold:.1f} s, warm {warm:.1f} s, cached {cached:.1f} s")
    finally: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__': main()
