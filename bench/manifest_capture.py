"""Manifest capture cost, warm, against a `pip freeze` subprocess measured in the same run. Prints figures only.

Run: python bench/manifest_capture.py [--reps 10]
"""
import argparse, statistics, subprocess, sys, time
from fastrepro.manifest import new_manifest
from fastrepro.capture import installed_packages

def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def main(reps=10):
    cold = timed(new_manifest)  # the first capture reads every distribution's metadata
    warm = statistics.median(timed(new_manifest) for _ in range(reps))
    freeze = statistics.median(timed(lambda: subprocess.run([sys.executable, '-m', 'pip', 'freeze'], capture_output=True, check=True))
                               for _ in range(3))
    print(f"manifest capture ({len(installed_packages())} packages, git, hardware, env vars): first {cold*1e3:.0f} ms, "
          f"warm median {warm*1e3:.1f} ms; pip freeze {freeze*1e3:.0f} ms; ratio pip freeze / warm capture {freeze/warm:.1f}x")

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0]); p.add_argument('--reps', type=int, default=10)
    main(**vars(p.parse_args()))
