"""What recording a DVC version costs a fit as it starts. Prints figures; asserts nothing.

The digits (1,797 PNGs) in a git repository with `dvc add`, and the same files outside DVC. For each, a `repro_learner`
is built once, then `data_fingerprint(learn)` (what `start_fit_manifest` records about the data: the fingerprint, and in
the DVC repository `data.dvc` too) is timed N times, warm (the hash caches filled), and the medians are compared. The first
call in the DVC repository, which imports dvc, is printed apart, and so is `data_version` alone.

Run: python bench/dvc_record.py [--n 20]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def project(root:Path, dvc:bool) -> Path:
    "The digits' train and valid folders under `root/data/digits`; with `dvc`, in a git repository and added with `dvc add`."
    from fastrepro.examples import digits_path
    root.mkdir(parents=True)
    for split in ('train', 'valid'): shutil.copytree(digits_path()/split, root/'data'/'digits'/split)
    if dvc:
        run = lambda *a: subprocess.run(a, cwd=root, check=True, capture_output=True)
        run('git', 'init', '-q'); run(str(Path(sys.executable).parent/'dvc'), 'init', '-q'); run(str(Path(sys.executable).parent/'dvc'), 'add', '-q', 'data/digits')
    return root/'data'/'digits'

def main(n=20):
    tmp = Path(tempfile.mkdtemp(prefix='fastrepro-bench-'))
    os.environ.update(FASTREPRO_CACHE=str(tmp/'cache'), DVC_SITE_CACHE_DIR=str(tmp/'dvc-site'), DVC_NO_ANALYTICS='1')
    from fastrepro.examples import digits_dblock, digits_cnn
    from fastrepro.learner import repro_learner
    from fastrepro.record import data_fingerprint
    from fastrepro.dvc import data_version
    try:
        plain, tracked = project(tmp/'plain', dvc=False), project(tmp/'tracked', dvc=True)
        learns = {k: repro_learner(digits_dblock(), p, seed=42, model=digits_cnn, num_workers=0) for k, p in (('plain', plain), ('dvc', tracked))}
        data_fingerprint(learns['plain'])  # the hash cache filled for both: the files are the same bytes, but other paths
        first = timed(lambda: data_fingerprint(learns['dvc']))
        t = {k: statistics.median(timed(lambda: data_fingerprint(l)) for _ in range(n)) for k, l in learns.items()}
        alone = statistics.median(timed(lambda: data_version(tracked)) for _ in range(n))
        assert 'dvc' in data_fingerprint(learns['dvc']) and 'dvc' not in data_fingerprint(learns['plain'])
        print(f"data_fingerprint of the digits (1,797 files), median of {n}, warm:")
        print(f"  outside DVC      {t['plain'] * 1e3:8.1f} ms")
        print(f"  DVC-tracked      {t['dvc'] * 1e3:8.1f} ms   ({t['dvc'] / t['plain']:.2f}x; data_version alone {alone * 1e3:.1f} ms)")
        print(f"  first call, DVC  {first * 1e3:8.1f} ms   (imports dvc; the paths new to the hash cache)")
    finally: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--n', type=int, default=20)
    main(**vars(p.parse_args()))
