"""Fingerprint throughput against `sha256sum`. Prints figures; asserts nothing.

1. cold: fingerprint_folder on N small files with an empty hash cache, against `find DIR -type f -print0 | xargs -0 sha256sum`
   on the same files (page cache warm for both: each is run once before it is timed);
2. warm: fingerprint_folder of M unchanged files with the cache filled (only `stat` calls and one cache read);
3. with --dvc PATH (a `dvc` executable, e.g. from `pip install dvc` in a scratch venv): `dvc add` of the cold folder in a
   scratch repo against fastrepro's cold fingerprint, and `dvc status` of the warm folder against the warm fingerprint.

Run: python bench/fingerprint.py [--cold 20000] [--warm 100000] [--size 2048] [--dvc PATH]
"""
import argparse, os, shutil, subprocess, tempfile, time
from pathlib import Path

def make_files(root, n, size):
    "n files of `size` random bytes, 1,000 to a folder (like class folders of images)."
    for i in range(n):
        d = root/f'{i // 1000:04d}'
        if i % 1000 == 0: d.mkdir(parents=True)
        (d/f'{i:07d}.bin').write_bytes(os.urandom(size))

def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def sha256sum(root):
    subprocess.run(f"find {root} -type f -print0 | xargs -0 sha256sum > /dev/null", shell=True, check=True)

def dvc_times(dvc, cold_dir, warm_dir):
    "Seconds for `dvc add` of `cold_dir`, and for `dvc status` once `warm_dir` is added; each in its own scratch DVC repo."
    def run(*args, cwd): subprocess.run([dvc, *args], cwd=cwd, check=True, capture_output=True)
    for d in (cold_dir, warm_dir): run('init', '--no-scm', '-q', cwd=d.parent)
    t_add = timed(lambda: run('add', '-q', cold_dir.name, cwd=cold_dir.parent))
    run('add', '-q', warm_dir.name, cwd=warm_dir.parent)
    t_status = min(timed(lambda: run('status', '-q', cwd=warm_dir.parent)) for _ in range(3))
    return t_add, t_status

def main(cold=20000, warm=100000, size=2048, dvc=None):
    tmp = Path(tempfile.mkdtemp(prefix='fastrepro-bench-'))
    os.environ['FASTREPRO_CACHE'] = str(tmp/'cache')  # before importing: a private, empty hash cache
    from fastrepro.fingerprint import fingerprint_folder, cache_dir
    try:
        data = tmp/'cold'; make_files(data, cold, size)
        sha256sum(data)  # page cache warm for both tools
        t_sum = min(timed(lambda: sha256sum(data)) for _ in range(3))
        t_cold = []
        for _ in range(3):
            shutil.rmtree(cache_dir(), ignore_errors=True)
            t_cold.append(timed(lambda: fingerprint_folder(data)))
        t_cold = min(t_cold)
        print(f"1. cold, {cold} files of {size} B: fastrepro {t_cold:.3f}s ({cold/t_cold:,.0f} files/s), "
              f"sha256sum {t_sum:.3f}s ({cold/t_sum:,.0f} files/s), ratio sha256sum/fastrepro {t_sum/t_cold:.2f}")
        big = tmp/'warm'; make_files(big, warm, 64)
        t_fill = timed(lambda: fingerprint_folder(big))
        t_warm = min(timed(lambda: fingerprint_folder(big)) for _ in range(3))
        print(f"2. warm, {warm} unchanged files: {t_warm:.3f}s (first, cold pass: {t_fill:.2f}s; ratio {t_fill/t_warm:.1f}x)")
        if dvc:
            (tmp/'dvc-cold').mkdir(); (tmp/'dvc-warm').mkdir()
            cold_copy, warm_copy = tmp/'dvc-cold'/'data', tmp/'dvc-warm'/'data'
            shutil.copytree(data, cold_copy); shutil.copytree(big, warm_copy)
            t_add, t_status = dvc_times(dvc, cold_copy, warm_copy)
            print(f"3. dvc add of the {cold} files {t_add:.2f}s (fastrepro cold {t_cold:.3f}s, ratio {t_add/t_cold:.1f}x); "
                  f"dvc status of the {warm} files {t_status:.2f}s (fastrepro warm {t_warm:.3f}s, ratio {t_status/t_warm:.1f}x)")
    finally: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--cold', type=int, default=20000); p.add_argument('--warm', type=int, default=100000)
    p.add_argument('--size', type=int, default=2048); p.add_argument('--dvc', default=None, help='a dvc executable')
    main(**vars(p.parse_args()))
