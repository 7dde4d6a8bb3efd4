"""One training job for tests/test_distributed.py, as a user's script would run it: under `torchrun` it trains inside
`learn.distrib_ctx(sync_bn=False, cpu=True)`; as a plain process it trains alone. Each rank writes `OUT.rank<r>.json`:
its final weights' sha256, per-epoch metrics, its manifest (rank 0), the targets `get_preds` gathered (with
`--inside get_preds`), and with `--log-steps N` the (dataset index, sha256
of the input's bytes) pairs of the first N training batches. Exit status 3 when the fit raised.

    torchrun --standalone --nproc_per_node=2 tests/dist_job.py OUT [--workers 2] [--bs 32] [--inside one_batch,validate]
    python tests/dist_job.py OUT --bs 64
"""
import argparse, hashlib, json, os, sys, warnings
import torch
from fastai.vision.all import accuracy, Callback
import fastai.distributed  # Learner.distrib_ctx
from fastai.distributed import DistributedDL
from fastrepro.manifest import last_manifest
from fastrepro.learner import repro_learner
from fastrepro.examples import digits_path, digits_dblock, digits_cnn
from fastrepro.fingerprint import hash_state_dict
from fastrepro.record import unwrap_model
from fastrepro.fresh import HISTORY_CELLS
from fastrepro.distributed import ReproDistributedDL

warnings.filterwarnings('ignore')

class BatchLog(Callback):
    "The (dataset index, sha256 of the input tensor's bytes) pairs of the first `steps` training batches of every epoch."
    order = 100
    def __init__(self, steps): self.steps, self.log = steps, []
    def before_batch(self):
        if not self.training or self.iter >= self.steps: return
        idxs, bs, xb = self.dl._DataLoader__idxs, self.dl.bs, self.xb[0].detach().cpu()  # this pass's order, on this rank
        ids = idxs[self.iter * bs:self.iter * bs + len(xb)]
        self.log.append(dict(epoch=self.epoch, step=self.iter,
                             items=[[int(i), hashlib.sha256(x.numpy().tobytes()).hexdigest()] for i, x in zip(ids, xb)]))

HISTORY = HISTORY_CELLS  # the cells a user runs before a fit, listed once in fastrepro.fresh

def main():
    p = argparse.ArgumentParser()
    p.add_argument('out')
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--rank1-seed', type=int, help='rank 1 uses this seed instead')
    p.add_argument('--rank1-data', help='rank 1 reads its digits from this folder instead')
    p.add_argument('--workers', type=int, default=0)
    p.add_argument('--bs', type=int, default=32, help='per process')
    p.add_argument('--epochs', type=int, default=2)
    p.add_argument('--no-batch-aug', action='store_true', help='no aug_transforms: only item-level random crops')
    p.add_argument('--every', type=int, default=1, help='every n-th image only (`digits_dblock(every=n)`)')
    p.add_argument('--inside', default='', help='HISTORY steps run inside distrib_ctx, before the fit')
    p.add_argument('--log-steps', type=int, default=0)
    p.add_argument('--gpu', action='store_true', help="GPUs: `learn.distrib_ctx()` with fastai's defaults (NCCL, SyncBatchNorm)")
    p.add_argument('--save-weights', action='store_true', help="rank 0 saves the final state dict to OUT.pt")
    p.add_argument('--fastai-sharding', action='store_true',
                   help="negative control: fastai's contiguous per-rank slices instead of fastrepro's per-batch parts")
    a = p.parse_args()
    if a.fastai_sharding: ReproDistributedDL.get_idxs = DistributedDL.get_idxs  # this throwaway process only
    rank, distributed = int(os.environ.get('RANK', 0)), 'WORLD_SIZE' in os.environ
    learn = repro_learner(digits_dblock(augment=not a.no_batch_aug, every=a.every), a.rank1_data if rank == 1 and a.rank1_data else digits_path(),
                          seed=a.rank1_seed if rank == 1 and a.rank1_seed is not None else a.seed,
                          model=digits_cnn, bs=a.bs, num_workers=a.workers, metrics=accuracy)
    log, out = BatchLog(a.log_steps), dict(rank=rank)
    def train():
        for h in filter(None, a.inside.split(',')):
            res = HISTORY[h](learn)
            if h == 'get_preds': out['get_preds_targets'] = res[1].tolist()  # gathered from both ranks, padding removed
        learn.fit_one_cycle(a.epochs, 1e-2, cbs=log)
    try:
        with learn.no_bar():
            if distributed:
                with (learn.distrib_ctx() if a.gpu else learn.distrib_ctx(sync_bn=False, cpu=True)): train()
            else: train()
    except Exception as e: out['error'] = f"{type(e).__name__}: {e}"
    else:
        sd = unwrap_model(learn.model).state_dict()
        out.update(weights=hash_state_dict(sd), values=[[float(v) for v in vs] for vs in learn.recorder.values], batches=log.log,
                   manifest=str(last_manifest(learn)) if rank == 0 else None)
        if a.save_weights and rank == 0: torch.save(sd, f"{a.out}.pt")
    with open(f"{a.out}.rank{rank}.json", 'w') as f: json.dump(out, f)
    if torch.distributed.is_initialized() and 'error' not in out: torch.distributed.destroy_process_group()
    if 'error' in out: sys.exit(3)

if __name__ == '__main__': main()
