"""One short fit whose manifest goes to $FASTREPRO_RUNS; prints the manifest's path.

python tests/manifest_job.py digits DATA SEED LR   a digits CNN on the PNG folder DATA
python tests/manifest_job.py tabular START         a wine learner that starts fitting at unix time START
python tests/manifest_job.py forever               a wine learner fitting until it is interrupted
python tests/manifest_job.py serve                 reads such commands from stdin, one JSON list per line, and runs each
                                                   in turn (one fresh process for several runs: the caller may change files between them)
"""
import json, sys, time, warnings
warnings.filterwarnings('ignore')
from fastai.vision.all import accuracy
from fastrepro.manifest import last_manifest
from fastrepro.all import repro_learner, digits_dblock, digits_cnn, wine_learner

def digits(data, seed, lr):
    learn = repro_learner(digits_dblock(augment=False), data, seed=int(seed), model=digits_cnn, num_workers=0, metrics=accuracy)
    with learn.no_bar(), learn.no_logging(): learn.fit(1, float(lr))
    return learn

def tabular(start):
    learn = wine_learner(seed=0, layers=(8,))
    time.sleep(max(0., float(start) - time.time()))  # all processes finish their fits at about the same moment
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-2)
    return learn

def forever():
    learn = wine_learner(seed=0, layers=(8,))
    with learn.no_bar(), learn.no_logging(): learn.fit(1_000_000, 1e-3)

JOBS = {'digits': digits, 'tabular': tabular, 'forever': forever}

def serve():
    "One JSON list of arguments per line on stdin; each manifest's path on stdout, after `manifest: `."
    for line in sys.stdin:
        job, *args = json.loads(line)
        print(f'manifest: {last_manifest(JOBS[job](*args))}', flush=True)

if __name__ == '__main__':
    if sys.argv[1] == 'serve': serve()
    else: print(last_manifest(JOBS[sys.argv[1]](*sys.argv[2:])))
