"""One elastic-mode job for tests/test_elastic.py, as a user's script would run it: under `torchrun`
it trains inside `learn.distrib_ctx(sync_bn=False, cpu=True)`; as a plain process it trains alone, at the same global batch
(`--global-bs`, cut into `--bs` = global / W per process). Each app it trains:

- `digits`: `repro_learner(..., shards=k)` on the digits CNN (BatchNorm, dropout, random crops and `aug_transforms`);
- `tabular`: stock `tabular_learner` on breast cancer (BatchNorm1d, embedding dropout) with `ReproCallback(shards=k)`.

With `--ckpt-every`, the first app is checkpointed (`ReproCheckpoint`) into `OUT-<app>/models/`; with `--resume CKPT`, it
resumes from that checkpoint to the end of its fit instead. Each rank writes `OUT.rank<r>.json`: per app, the sha256 of the
weights and buffers and of the optimizer state after every epoch it trained, the per-epoch metrics, its loaders' workers and their start
method, its manifest and the mode it records (rank 0), or the error. `--shards 0` turns the mode off (the
negative control), and so does an app named with `:off` (`digits:off`), in the same process. `--workers N` gives the loaders N
workers each, started by `--start-method` (default: this Python's). Exit status 3 when a fit raised.

    torchrun --standalone --nproc_per_node=2 tests/elastic_job.py OUT [--apps digits,tabular] [--shards 4] [--epochs 2] [--workers 2 --start-method forkserver]
    python tests/elastic_job.py OUT
"""
import argparse, json, multiprocessing, os, sys, warnings
from pathlib import Path
import torch
from fastai.vision.all import accuracy, Callback
import fastai.distributed  # Learner.distrib_ctx
from fastrepro.manifest import last_manifest
from fastrepro.learner import repro_learner
from fastrepro.examples import digits_path, digits_dblock, digits_cnn
from fastrepro.fingerprint import hash_state_dict
from fastrepro.manifest import load_manifest
from fastrepro.capture import start_method
from fastrepro.checkpoint import ReproCheckpoint
import fastrepro.resume  # adds Learner.resume
sys.path.insert(0, str(Path(__file__).parent))
from apps import make_tabular

warnings.filterwarnings('ignore')

class EpochHashes(Callback):
    "After every epoch: the sha256 of the weights and buffers, and of the optimizer's state."
    order = 100
    def before_fit(self): self.log = []
    def after_epoch(self):
        opt = {f'{i}.{k}': v for i, s in enumerate(self.learn.opt.state_dict()['state']) for k, v in s.items() if isinstance(v, torch.Tensor)}
        self.log.append(dict(weights=hash_state_dict(self.learn.model.state_dict()), opt=hash_state_dict(opt)))

def digits(bs, shards, workers=0):
    return repro_learner(digits_dblock(every=3), digits_path(), seed=42, model=digits_cnn, bs=bs, num_workers=workers,
                         metrics=accuracy, shards=shards)

def tabular(bs, shards, workers=0): return make_tabular(workers, bs=bs, shards=shards)  # tests/apps.py, with ReproCallback(shards=k)

APPS = dict(digits=digits, tabular=tabular)

def run_app(app:str, out:str, world:int, global_bs:int=64, shards:int=4, epochs:int=2, ckpt_every:str=None, resume:str=None,
            workers:int=0) -> dict:
    """Train `app` (`digits`, `tabular`, or either with `:off`) as one rank of `world` processes, checkpointing it every
    `ckpt_every`, or resuming it from the checkpoint `resume`; its result, or its error. Also called in the test's own
    process, for a resume on one process."""
    name, off = app.removesuffix(':off'), app.endswith(':off')
    learn, hashes = APPS[name](global_bs // world, None if off or not shards else shards, workers), EpochHashes()
    learn.add_cb(hashes); learn.path = Path(f'{out}-{app}')  # checkpoints go to its models/
    if ckpt_every: learn.add_cb(ReproCheckpoint(every=ckpt_every if ckpt_every == 'epoch' else int(ckpt_every), keep=None))
    fit = (lambda l: l.resume(resume, fit=lambda l: l.fit_one_cycle(epochs, 1e-2))) if resume else (lambda l: l.fit_one_cycle(epochs, 1e-2))
    try:
        with learn.no_bar(), learn.no_logging():
            if world > 1:
                with learn.distrib_ctx(sync_bn=False, cpu=True): fit(learn)
            else: fit(learn)
    except Exception as e: return dict(error=f"{type(e).__name__}: {e}")
    m = load_manifest(last_manifest(learn)) if int(os.environ.get('RANK', 0)) == 0 else {}
    mode = (m.get('hyperparameters') or {}).get('elastic')
    return dict(epochs=hashes.log, values=[[float(v) for v in vs] for vs in learn.recorder.values], manifest=str(last_manifest(learn)) if m else None,
                workers=(learn.dls.train.fake_l.num_workers, start_method()),  # how its loaders ran
                elastic=dict(**mode, world_size=m['hardware']['topology']['world_size']) if mode else None)

def main():
    p = argparse.ArgumentParser()
    p.add_argument('out')
    p.add_argument('--apps', default='digits,tabular')
    p.add_argument('--global-bs', type=int, default=64)
    p.add_argument('--shards', type=int, default=4, help='0: the mode off')
    p.add_argument('--epochs', type=int, default=2)
    p.add_argument('--ckpt-every', help="checkpoint the first app: 'epoch' or every N batches, into OUT-models/ (rank 0 writes)")
    p.add_argument('--resume', help='resume the first app from this checkpoint, to the end of its fit')
    p.add_argument('--workers', type=int, default=0, help="each loader's workers")
    p.add_argument('--start-method', choices=('fork', 'spawn', 'forkserver'), help="how the workers start (default: this Python's)")
    a = p.parse_args()
    if a.start_method:
        multiprocessing.set_start_method(a.start_method)
        # the server that forks the workers imports these once (forkserver's preload of __main__ was broken until CPython
        # gh-126631, fixed in 3.14 and in 3.13)
        multiprocessing.set_forkserver_preload(['fastai.vision.all', 'fastai.tabular.all', 'fastrepro.learner'])
    torch.set_num_threads(1)  # pinned in every topology: torchrun sets one thread only when it starts more than one process
    rank, world, apps = int(os.environ.get('RANK', 0)), int(os.environ.get('WORLD_SIZE', 1)), a.apps.split(',')
    out = dict(rank=rank, world_size=world)
    for app in apps:
        first = app == apps[0]
        out[app] = run_app(app, a.out, world, a.global_bs, a.shards, a.epochs, a.ckpt_every if first else None, a.resume if first else None,
                           a.workers)
    failed = any('error' in out[app] for app in apps)
    with open(f"{a.out}.rank{rank}.json", 'w') as f: json.dump(out, f)
    if torch.distributed.is_initialized() and not failed: torch.distributed.destroy_process_group()
    if failed: sys.exit(3)

if __name__ == '__main__': main()
