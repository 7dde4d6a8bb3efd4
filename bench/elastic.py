"""What the elastic mode (`shards=k`, `fastrepro.elastic`) costs per training step, on CPU with gloo. Prints figures; it
asserts nothing (machines here are noisy).

For a conv net (the digits CNN: convolutions, BatchNorm, dropout, random crops and `aug_transforms`) and a light MLP
(`tabular_learner` on the digits' 64 pixels: BatchNorm1d, two hidden layers, dropout), at shard sizes 8, 32 and 128 with
k=4 shards (global batches 32, 128, 512), it times the training steps (before_batch to after_batch, validation left out)
of fits with the mode off and on, alternating `--reps` times in the same processes, on 1 process and on 2 (`torchrun`,
each rank one thread, bs = global / 2). It prints two ratios of the mode's time per step:

- against plain data-parallel training at the same number of processes (the same launch, so the same machine state);
- against one process at the same global batch (mode on 2 processes / plain on 1: across two launches).

Run: python bench/elastic.py [--reps 2] [--epochs 2]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time, warnings
from pathlib import Path
import torch
from fastai.vision.all import accuracy, Callback
import fastai.distributed  # Learner.distrib_ctx
from fastrepro.all import repro_learner, digits_dblock, digits_path, digits_cnn, ReproCallback

warnings.filterwarnings('ignore')
K, SHARD_SIZES = 4, (8, 32, 128)

class StepTimer(Callback):
    "Seconds per training step: before_batch to after_batch, training only."
    order = 99
    def before_fit(self): self.times = []
    def before_batch(self): self.t = time.perf_counter() if self.training else None
    def after_batch(self):
        if self.t is not None: self.times.append(time.perf_counter() - self.t)

def digits_frame():
    import pandas as pd
    from sklearn.datasets import load_digits
    d = load_digits()
    return pd.DataFrame(d.data, columns=[f'p{i}' for i in range(64)]).assign(target=d.target)

def learner(model:str, bs:int, shards):
    if model == 'cnn':
        return repro_learner(digits_dblock(), digits_path(), seed=42, model=digits_cnn, bs=bs, num_workers=0, metrics=accuracy, shards=shards)
    from fastai.tabular.all import TabularDataLoaders, Normalize, tabular_learner, tabular_config, CategoryBlock
    df = digits_frame()
    dls = TabularDataLoaders.from_df(df, y_names='target', y_block=CategoryBlock(), cont_names=list(df.columns[:-1]), procs=[Normalize],
                                     valid_idx=list(range(0, len(df), 5)), bs=bs, num_workers=0)
    torch.manual_seed(42)
    return tabular_learner(dls, layers=[256, 128], config=tabular_config(ps=0.1), metrics=accuracy, cbs=ReproCallback(seed=42, shards=shards))

def fit_time(model, global_bs, shards, world, epochs) -> float:
    "Median seconds per training step of one fit."
    learn, timer = learner(model, global_bs // world, shards), StepTimer()
    with learn.no_bar(), learn.no_logging():
        if world > 1:
            with learn.distrib_ctx(sync_bn=False, cpu=True): learn.fit(epochs, 1e-3, cbs=timer)
        else: learn.fit(epochs, 1e-3, cbs=timer)
    return statistics.median(timer.times[1:] or timer.times)  # the first step warms up

def worker(out, reps, epochs):
    torch.set_num_threads(1)
    world, rank = int(os.environ.get('WORLD_SIZE', 1)), int(os.environ.get('RANK', 0))
    res = {}
    for model in ('cnn', 'mlp'):
        for ss in SHARD_SIZES:
            times = {'plain': [], 'elastic': []}
            for _ in range(reps):
                for mode in times: times[mode].append(fit_time(model, K * ss, K if mode == 'elastic' else None, world, epochs))
            res[f'{model}/{ss}'] = {m: statistics.median(t) for m, t in times.items()}
    if rank == 0: Path(out).write_text(json.dumps(res))

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--reps', type=int, default=2); p.add_argument('--epochs', type=int, default=2)
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker: return worker(a.worker, a.reps, a.epochs)
    d, env = Path(tempfile.mkdtemp(prefix='bench-elastic-')), {**os.environ, 'OMP_NUM_THREADS': '1', 'FASTREPRO_RUNS': tempfile.mkdtemp()}
    torchrun = [str(Path(sys.executable).with_name('torchrun')), '--standalone', '--nproc_per_node=2']
    args = [__file__, '--reps', str(a.reps), '--epochs', str(a.epochs), '--worker']
    subprocess.run([sys.executable, *args, str(d/'w1.json')], check=True, env=env)
    subprocess.run([*torchrun, *args, str(d/'w2.json')], check=True, env=env)
    w1, w2 = (json.loads((d/f'w{w}.json').read_text()) for w in (1, 2))
    print(f"ms per training step (median of {a.reps} fits x steps), k={K} shards, CPU, gloo, one thread per process; {torch.__version__}")
    print(f"{'model/shard size':18} {'1p plain':>9} {'1p mode':>8} {'2p plain':>9} {'2p mode':>8}  {'mode/plain 1p':>13} {'mode/plain 2p':>13} {'2p mode/1p plain':>16}")
    for key in w1:
        a1, b1, a2, b2 = w1[key]['plain'], w1[key]['elastic'], w2[key]['plain'], w2[key]['elastic']
        print(f"{key:18} {a1*1e3:9.1f} {b1*1e3:8.1f} {a2*1e3:9.1f} {b2*1e3:8.1f}  {b1/a1:13.2f} {b2/a2:13.2f} {b2/a1:16.2f}")

if __name__ == '__main__': main()
