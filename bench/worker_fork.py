"""Loader workers forked right after a gloo collective: how many passes hang? Run under torchrun:

    torchrun --standalone --nproc_per_node=2 bench/worker_fork.py [--passes 1500] [--unfixed]

Each pass of a keyed `ReproDistributedDL` with 2 workers per rank broadcasts rank 0's order (`get_idxs`), then forks its
workers; each batch is followed by an all-reduce, as DDP's gradient sync. A worker forked while one of gloo's threads holds
CPython's thread-state lock (it takes it to free the Python objects a finished collective held) hangs for ever inside
`os.fork()` (CPython gh-112275, fixed in 3.12 and 3.11.10): the pass then times out here, and the script prints where the
worker is stuck and stops. `--unfixed` broadcasts as fastrepro did before keeping the broadcast's tensor and work
(`ReproDistributedDL._broadcast`). Prints, per rank, the passes run and whether one hung.
"""
import argparse, os, subprocess, sys, time, warnings
warnings.filterwarnings('ignore')
import torch, torch.distributed as dist
from fastai.vision.all import DataBlock, ImageBlock, CategoryBlock, parent_label, RandomSplitter, Resize, get_image_files
from fastrepro.data import keyed_loader
from fastrepro.distributed import ReproDistributedDL
from fastrepro.examples import digits_path

def unfixed_broadcast(self, t, rank):
    "fastrepro's broadcast before the fix: the tensor's and the work's last references may be dropped on gloo's thread."
    t = torch.tensor(t, dtype=torch.long)
    dist.broadcast(t, rank)
    return t.tolist()

def stuck_workers(rank):
    "Where this rank's worker processes are (gdb's backtrace), printed; then they are killed."
    for pid in subprocess.run(['pgrep', '-P', str(os.getpid())], capture_output=True, text=True).stdout.split():
        bt = subprocess.run(['gdb', '-batch', '-p', pid, '-ex', 'bt 12'], capture_output=True, text=True).stdout
        frames = [l.split(' in ')[-1].split(' (')[0] for l in bt.splitlines() if l.startswith('#')]
        print(f"rank {rank}: worker {pid} is in {' <- '.join(frames[-6:]) or 'an unknown place (no gdb?)'}", flush=True)
        os.kill(int(pid), 9)

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--passes', type=int, default=1500)
    p.add_argument('--unfixed', action='store_true', help="broadcast as fastrepro did before the fix")
    a = p.parse_args()
    dist.init_process_group('gloo')
    rank = dist.get_rank()
    if a.unfixed: ReproDistributedDL._broadcast = unfixed_broadcast
    items = sorted(get_image_files(digits_path()))[:128]
    dls = DataBlock(blocks=(ImageBlock, CategoryBlock), get_y=parent_label, splitter=RandomSplitter(seed=0),
                    item_tfms=Resize(8)).dataloaders(items, bs=16, num_workers=2)
    dl = ReproDistributedDL(keyed_loader(dls.train, 42))
    dl.fake_l.timeout = 20  # a worker that never starts: torch raises instead of waiting for ever
    t0, label = time.time(), 'unfixed' if a.unfixed else 'fixed'
    for i in range(a.passes):
        dl.dl.repro_streams.pin(0, i)
        try:
            for _ in dl: dist.all_reduce(torch.ones(64))
        except RuntimeError as e:
            print(f"rank {rank} ({label}): pass {i} of {a.passes} HUNG ({e}), after {time.time() - t0:.0f} s", flush=True)
            stuck_workers(rank)
            os._exit(3)  # torchrun stops the other rank, which waits in a collective
    print(f"rank {rank} ({label}): {a.passes} passes, none hung ({time.time() - t0:.0f} s)", flush=True)
    dist.destroy_process_group()

if __name__ == '__main__': main()
