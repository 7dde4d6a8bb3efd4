"""What MLflow logging adds to a fit. Prints figures; it asserts nothing (machines here are noisy).

A digits `fit_one_cycle` (repro_learner, 0 workers), timed in rotated order in one process, without MLflow and with
`MLflowReproCallback` logging to (a) the local SQLite store and (b) a real `mlflow server` on 127.0.0.1 (SQLite backend,
proxied artifacts), per epoch, and with `batch_loss=True`. Each variant is warmed up first, so the store's one-time costs
(creating a new SQLite database, the first connection of a process) are reported apart. Requests are counted by wrapping
`MlflowClient.log_batch` and `MlflowClient.log_metric` in this script (an instrument, not a mock: the calls still go through).

Run: python bench/mlflow_logging.py [--rounds 5] [--epochs 3]
"""
import argparse, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time, urllib.request, warnings
from pathlib import Path
import mlflow
from mlflow import MlflowClient
from fastai.vision.all import accuracy
from fastrepro.learner import repro_learner
from fastrepro.examples import digits_path, digits_dblock, digits_cnn
from fastrepro.mlflow import MLflowReproCallback, default_tracking_uri

warnings.filterwarnings('ignore')
CALLS = {'log_batch': 0, 'log_metric': 0}

def _count(name):
    real = getattr(MlflowClient, name)
    def counted(self, *a, **k): CALLS[name] += 1; return real(self, *a, **k)
    setattr(MlflowClient, name, counted)

def start_server(root:Path):
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    p = subprocess.Popen([str(Path(sys.executable).parent/'mlflow'), 'server', '--backend-store-uri', f'sqlite:///{root}/server.db',
                          '--artifacts-destination', str(root/'artifacts'), '--host', '127.0.0.1', '--port', str(port), '--workers', '1'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    uri, t0 = f'http://127.0.0.1:{port}', time.time()
    while True:
        try:
            with urllib.request.urlopen(uri + '/health', timeout=2): return p, uri, time.time() - t0
        except OSError: time.sleep(0.3)

def timed_fit(tracker, epochs):
    learn = repro_learner(digits_dblock(), digits_path(), seed=42, model=digits_cnn, num_workers=0, metrics=accuracy,
                          mlflow=tracker if tracker is not None else False)
    before = dict(CALLS)
    with learn.no_bar(), learn.no_logging():
        t = time.perf_counter(); learn.fit_one_cycle(epochs, 1e-2); secs = time.perf_counter() - t
    return secs, {k: CALLS[k] - before[k] for k in CALLS}, len(learn.dls.train) * epochs

def main(rounds, epochs):
    root = Path(tempfile.mkdtemp(prefix='fastrepro-bench-mlflow-'))
    os.environ['FASTREPRO_RUNS'] = str(root/'runs')
    (root/'server').mkdir()
    server, server_uri, server_start = start_server(root/'server')
    try:
        local = default_tracking_uri()
        t = time.perf_counter(); MlflowClient(local).search_experiments(); new_db = time.perf_counter() - t
        print(f"one-time: first use of a new SQLite store in this process {new_db:.2f} s (imports, tables, migrations); the server answered /health after {server_start:.1f} s")
        _count('log_batch'); _count('log_metric')
        variants = {'no MLflow': lambda: None,
                    'SQLite, per epoch': lambda: MLflowReproCallback(tracking_uri=local),
                    'server, per epoch': lambda: MLflowReproCallback(tracking_uri=server_uri),
                    'SQLite, batch_loss': lambda: MLflowReproCallback(tracking_uri=local, batch_loss=True),
                    'server, batch_loss': lambda: MLflowReproCallback(tracking_uri=server_uri, batch_loss=True)}
        names = list(variants)
        for v in names: timed_fit(variants[v](), 1)  # warm up: imports, store connections
        times, calls, batches = {v: [] for v in names}, {}, 0
        for i in range(rounds):
            for v in names[i % len(names):] + names[:i % len(names)]:
                secs, calls[v], batches = timed_fit(variants[v](), epochs)
                times[v].append(secs)
        base = statistics.median(times['no MLflow'])
        print(f"\ndigits fit_one_cycle({epochs}), {batches} training batches, median of {rounds} rounds "
              f"(MLflow {mlflow.__version__}):")
        for v in names:
            med = statistics.median(times[v])
            print(f"  {v:20s} {med:6.2f} s  {'' if v == 'no MLflow' else f'+{(med - base) * 1e3:6.0f} ms  ({(med / base - 1) * 100:+.1f}%)'}"
                  f"  log_batch calls {calls[v]['log_batch']}, log_metric calls {calls[v]['log_metric']}")
    finally:
        os.killpg(server.pid, signal.SIGTERM); server.wait(30)
        shutil.rmtree(root, ignore_errors=True)

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--rounds', type=int, default=5); p.add_argument('--epochs', type=int, default=3)
    a = p.parse_args()
    main(a.rounds, a.epochs)
