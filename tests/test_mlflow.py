"""MLflow, for real: a local SQLite store and an `mlflow server` subprocess on 127.0.0.1. Every counted fit of several fastai
applications is a complete MLflow run equal to its manifest; diffs of MLflow runs are diffs of files; the registry gate;
a server killed mid-fit, then `fastrepro mlflow sync`; no planted secret reaches the store (with a marker that does)."""
import json, os, shlex, signal, socket, subprocess, sys, time, urllib.request, warnings
from functools import partial
from pathlib import Path
import cloudpickle, pytest, torch
pytest.importorskip('mlflow')
from mlflow import MlflowClient
from fastai.vision.all import accuracy, Callback
from fastrepro.manifest import last_manifest
from fastrepro.learner import repro_learner
from fastrepro.examples import digits_path, digits_dblock, digits_cnn
from fastrepro.manifest import load_manifest
from fastrepro.fingerprint import hash_state_dict
from fastrepro.mlflow import MLflowReproCallback, RUN_STATUS, MANIFEST_ARTIFACT, EXPORT_ARTIFACT, default_tracking_uri
from fastrepro.registry import RegistryGateError, register_model
sys.path.insert(0, str(Path(__file__).parent))
import apps
from apps import APPS
from helpers import HANG_S, run_cli

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent

def _free_port():
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

class Server:
    "A real `mlflow server` with a SQLite backend and proxied artifacts, in its own process group."
    def __init__(self, root:Path, port:int=None):
        self.root, self.port = root, port or _free_port()
        self.uri = f'http://127.0.0.1:{self.port}'
    def start(self, timeout=HANG_S):
        "Start it and wait until it answers `/health`. A server that exits fails at once; one that neither answers nor exits is hung."
        # It imports MLflow's app before it listens. In the loaded CI run of stop 31 one was still starting when the 90 s this
        # once allowed ran out (its log: 75 s from creating its tables to listening), and failed a test that had nothing wrong.
        self.proc = subprocess.Popen([str(BIN/'mlflow'), 'server', '--backend-store-uri', f'sqlite:///{self.root}/server.db',
                                      '--artifacts-destination', str(self.root/'artifacts'), '--host', '127.0.0.1',
                                      '--port', str(self.port), '--workers', '1'],
                                     stdout=subprocess.DEVNULL, stderr=open(self.root/'server.log', 'ab'), start_new_session=True,
                                     # without MLflow's job runner: 3 to 7 huey consumer processes, each importing MLflow
                                     # (about 4 CPU-s), for server jobs no test uses
                                     env={**os.environ, 'MLFLOW_SERVER_ENABLE_JOB_EXECUTION': 'false'})
        t0 = time.time()
        while time.time() - t0 < timeout and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.uri + '/health', timeout=2) as r:
                    if r.status == 200: return self
            except OSError: time.sleep(0.5)
        why = f'exited with {self.proc.returncode}' if self.proc.poll() is not None else f'did not answer within {timeout} s'
        self.stop(); raise RuntimeError(f"mlflow server {why}: {(self.root/'server.log').read_text()[-2000:]}")
    def stop(self, sig=signal.SIGTERM):
        try: os.killpg(self.proc.pid, sig)
        except ProcessLookupError: pass
        self.proc.wait(HANG_S)  # a guard against a hang, as in `start`

@pytest.fixture(scope='module')
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp('mlflow-server')).start()
    yield s
    s.stop()

@pytest.fixture(autouse=True)
def runs(tmp_path, monkeypatch):
    "Each test's own runs folder (so its local store is `tmp_path/mlflow.db`), and the repository as the working directory."
    monkeypatch.setenv('FASTREPRO_RUNS', str(tmp_path/'runs'))
    for k in ('MLFLOW_TRACKING_URI', 'MLFLOW_EXPERIMENT_NAME'): monkeypatch.delenv(k, raising=False)
    monkeypatch.chdir(Path(__file__).parent.parent)
    return tmp_path/'runs'

def _digits(seed=42, lr=1e-2, mlflow=False):
    return repro_learner(digits_dblock(every=3), digits_path(), seed=seed, model=digits_cnn, num_workers=0, metrics=accuracy, mlflow=mlflow)

def _fit(learn, lr=1e-2): learn.fit(1, lr)

def _manifests(runs:Path) -> list: return [load_manifest(f) for f in sorted(runs.glob('*.json'))]

def _mlflow_run(client, m):
    found = client.search_runs([e.experiment_id for e in client.search_experiments()],
                               filter_string=f"tags.`fastrepro.run_id` = '{m['run_id']}'")
    assert len(found) == 1, (m['run_id'], len(found))
    return found[0]

def _fastrepro_ids(uri) -> set:
    client = MlflowClient(uri)
    return {r.data.tags['fastrepro.run_id'] for e in client.search_experiments() for r in client.search_runs([e.experiment_id])
            if 'fastrepro.run_id' in r.data.tags}

def check_logged(uri, runs:Path, tmp:Path, before:set=frozenset()):
    "Every manifest in `runs` is one complete MLflow run that says what the manifest says; no other run was added since `before`."
    client, ms = MlflowClient(uri), _manifests(runs)
    assert ms
    assert _fastrepro_ids(uri) - set(before) == {m['run_id'] for m in ms}
    for m in ms:
        r = _mlflow_run(client, m)
        t, res = r.data.tags, m['results']
        assert r.info.status == RUN_STATUS[m['status']] and t['fastrepro.logged'] == 'complete'
        assert (t['fastrepro.seed'], t['fastrepro.fit'], r.data.params['seed']) == (str(m['randomness']['seed']), str(m['randomness']['fit']), str(m['randomness']['seed']))
        assert t['mlflow.source.git.commit'] == m['code']['commit'] and m['code']['commit']
        assert t['fastrepro.data.sha256'] == m['data']['items']['sha256']
        assert t['fastrepro.determinism.deterministic_algorithms'] == json.dumps(m['randomness']['set_seed']['deterministic_algorithms'])
        assert r.data.params['epochs'] == str(m['hyperparameters']['epochs'])
        for i, name in enumerate(res['metric_names']):
            hist = client.get_metric_history(r.info.run_id, name)
            assert [(h.step, h.value) for h in hist] == [(e, row[i]) for e, row in enumerate(res['epochs']) if row[i] is not None], name
        di = r.inputs.dataset_inputs[0]
        assert di.dataset.digest == m['data']['items']['sha256'][:32]
        local = tmp/'dl'/r.info.run_id; local.mkdir(parents=True)
        got = Path(client.download_artifacts(r.info.run_id, MANIFEST_ARTIFACT, str(local))).read_bytes()
        assert got == (runs/f"{m['run_id']}.json").read_bytes()
    return ms

# -------------------------------------------------------------------- every counted fit, several applications, two stores

def _app_learner(name, uri):
    if name == 'digits': return _digits(mlflow=uri), _fit
    learn = APPS[name].make(0)
    learn.add_cb(MLflowReproCallback(tracking_uri=uri))
    return learn, APPS[name].fit

@pytest.mark.parametrize('store,app', [('sqlite', 'digits'), ('sqlite', 'collab'), ('sqlite', 'save_early'),
                                       ('server', 'digits'), ('server', 'vision_lr_find_fine_tune'), ('server', 'tabular')])
def test_every_counted_fit_is_a_complete_mlflow_run(store, app, request, runs, tmp_path):
    uri = request.getfixturevalue('server').uri if store == 'server' else default_tracking_uri(runs)
    learn, fit, before = *_app_learner(app, uri), _fastrepro_ids(uri)
    with learn.no_bar(), learn.no_logging(): fit(learn)
    ms = check_logged(uri, runs, tmp_path, before)
    if app == 'vision_lr_find_fine_tune': assert len(ms) == 2  # lr_find makes no run; fine_tune's two fits make two
    if store == 'sqlite': assert (runs.parent/'mlflow.db').is_file() and (runs.parent/'mlartifacts').is_dir()

# -------------------------------------------------------------------- reading back: show, diff, runs --mlflow

_cli = run_cli

def test_diff_of_two_mlflow_runs_is_the_diff_of_their_files(server, runs):
    a, b = _digits(mlflow=server.uri), _digits(mlflow=server.uri)
    with a.no_bar(), b.no_bar(): a.fit(1, 1e-2); b.fit(1, 5e-3)
    files = _cli('diff', str(last_manifest(a)), str(last_manifest(b)))
    uris = _cli('--tracking-uri', server.uri, 'diff', f'runs:/{a.mlflow_run_id}', f'mlflow:{b.mlflow_run_id}')
    assert (uris.returncode, uris.stdout) == (files.returncode, files.stdout) == (1, files.stdout), uris.stderr
    assert 'lr' in files.stdout and 'results:' in files.stdout
    same = _cli('--tracking-uri', server.uri, 'diff', f'runs:/{a.mlflow_run_id}', str(last_manifest(a)))
    assert (same.returncode, same.stdout.strip()) == (0, 'nothing that can change results differs')
    show = _cli('--tracking-uri', server.uri, 'show', f'runs:/{a.mlflow_run_id}')
    assert show.returncode == 0 and load_manifest(last_manifest(a))['run_id'] in show.stdout
    listed = _cli('runs', '--mlflow', server.uri)
    assert listed.returncode == 0 and a.mlflow_run_id in listed.stdout and b.mlflow_run_id in listed.stdout
    missing = _cli('--tracking-uri', server.uri, 'show', 'runs:/0123456789abcdef')
    assert missing.returncode == 2 and "no MLflow run '0123456789abcdef'" in missing.stderr

# -------------------------------------------------------------------- the registry gate

@pytest.fixture(scope='module', autouse=True)
def picklable_by_value():
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # fresh children cannot import this test module
    yield

def test_registry_gate_refuses_incomplete_runs_and_registers_reproduced_ones(runs, tmp_path, monkeypatch):
    uri = default_tracking_uri(runs)
    learn = _digits(mlflow=MLflowReproCallback(log_model=True))
    with learn.no_bar(): learn.fit(1, 1e-2)
    # a fit outside any git repository has no code commit: refused, and nothing is registered
    monkeypatch.chdir(tmp_path)
    nogit = _digits(mlflow=True)
    with nogit.no_bar(): nogit.fit(1, 1e-2)
    monkeypatch.chdir(Path(__file__).parent.parent)
    with pytest.raises(RegistryGateError, match='no code commit'): register_model(nogit, 'digits')
    client = MlflowClient(uri)
    assert client.search_registered_models() == []
    # reproduced with another learning rate: two fresh runs agree with each other, not with the manifest (negative control)
    with pytest.raises(RegistryGateError, match="fresh reproductions end with weights"):
        register_model(learn, 'digits', verify=True, make_learner=_digits, fit=partial(_fit, lr=5e-3))
    assert client.search_registered_models() == []
    # the same recipe reproduces the weights: registered, from the run URI (its exported learner) and from the Learner.
    # The recipe logs to this store, yet the fresh reproductions add no run to it: checks are not experiments.
    before = _fastrepro_ids(uri)
    mv = register_model(f'runs:/{learn.mlflow_run_id}', 'digits', verify=True, make_learner=partial(_digits, mlflow=uri), fit=_fit)
    assert _fastrepro_ids(uri) == before
    assert str(mv.version) == '1' and mv.run_id == learn.mlflow_run_id
    assert mv.tags['fastrepro.final_weights_sha256'] == load_manifest(last_manifest(learn))['results']['final_weights_sha256']
    mv2 = register_model(learn, 'digits')
    assert str(mv2.version) == '2' and mv2.source != mv.source  # a new version never replaces an earlier one's files
    import mlflow.pyfunc, mlflow.artifacts
    served = mlflow.pyfunc.load_model(mlflow.artifacts.download_artifacts(mv.source, dst_path=str(tmp_path), tracking_uri=uri))
    items = [str(sorted((digits_path()/'valid'/str(k)).glob('*.png'))[0]) for k in range(10)]
    with learn.no_bar(): assert served.predict(items) == [learn.predict(p)[0] for p in items]

# -------------------------------------------------------------------- faults: the server dies mid-fit

class KillServer(Callback):
    "SIGKILLs the server after epoch 0 has been logged (this runs after MLflowReproCallback's after_epoch)."
    order = MLflowReproCallback.order + 1
    def __init__(self, server): self.server = server
    def after_epoch(self):
        if self.epoch == 0: self.server.stop(signal.SIGKILL)

def test_server_killed_mid_fit_loses_nothing_and_sync_uploads_once(tmp_path, runs):
    (tmp_path/'srv').mkdir()
    srv = Server(tmp_path/'srv').start()
    learn = _digits(mlflow=srv.uri)
    t0 = time.time()
    with learn.no_bar(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always'); learn.fit(3, 1e-2, cbs=KillServer(srv))
    took = time.time() - t0
    msgs = [str(x.message) for x in w if 'MLflow' in str(x.message)]
    assert len(msgs) == 1 and 'mlflow sync' in msgs[0], msgs
    command = shlex.split(msgs[0].split('`')[1])  # the warning's own command names this server's store
    assert command[:3] == ['fastrepro', '--tracking-uri', srv.uri] and learn.mlflow_run_id
    m = load_manifest(last_manifest(learn))
    assert m['status'] == 'completed' and len(m['results']['epochs']) == 3
    assert took < 120, took  # bounded calls: no 4-minute retry loop
    srv = Server(tmp_path/'srv', srv.port).start()  # the same database and artifacts, restarted
    try:
        client = MlflowClient(srv.uri)
        partial_run = client.get_run(learn.mlflow_run_id)
        assert partial_run.info.status == 'RUNNING' and 'fastrepro.logged' not in partial_run.data.tags
        first = _cli(*command[1:])
        assert first.returncode == 0 and f"uploaded 1 run(s)" in first.stdout and m['run_id'] in first.stdout, first.stderr
        check_logged(srv.uri, runs, tmp_path)  # completed in place: epochs 1 and 2 added, epoch 0 not duplicated
        again = _cli('--tracking-uri', srv.uri, 'mlflow', 'sync', str(runs))
        assert again.returncode == 0 and 'uploaded 0 run(s)' in again.stdout
    finally: srv.stop()

# -------------------------------------------------------------------- the registry serves every learner it admits

def test_the_registry_serves_tabular_and_collab_a_dataframe_and_refuses_what_it_cannot_serve(runs, monkeypatch):
    """Loaded back by `models:/name/version`, a registered tabular classifier and a collab regression take a DataFrame and
    return what `get_preds` returns on the same rows. An image regression cannot be served: refused, with why."""
    uri = default_tracking_uri(runs)
    monkeypatch.setenv('MLFLOW_TRACKING_URI', uri)  # where `models:/` URIs are looked up
    import mlflow.pyfunc
    for app, rows in (('tabular', apps.cancer_frame().iloc[:7]), ('collab', apps.digit_ratings().iloc[:9])):
        learn = APPS[app].make(0)
        learn.add_cb(MLflowReproCallback(tracking_uri=uri, log_model=True))
        with learn.no_bar(), learn.no_logging(): APPS[app].fit(learn)
        mv = register_model(learn, app)
        with learn.no_bar(): want = learn.get_preds(dl=learn.dls.test_dl(rows))[0].numpy()
        got = mlflow.pyfunc.load_model(f'models:/{app}/{mv.version}').predict(rows)
        assert got.shape == want.shape and got.dtype == want.dtype and (got == want).all(), app
        if app == 'collab': assert want.ndim == 1 or want.shape[1] == 1  # a regression: one value per row, not class probabilities
    learn = repro_learner(digit_value_dblock(), digits_path(), seed=42, model=partial(digits_cnn, n_out=1), num_workers=0,
                          mlflow=MLflowReproCallback(tracking_uri=uri, log_model=True))
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-2)
    with pytest.raises(RegistryGateError, match='the pyfunc model serves tabular and collab learners'): register_model(learn, 'values')

def digit_value(path) -> float: return float(Path(path).parent.name)

def digit_value_dblock():
    "The digits as an image regression: a kind the pyfunc model does not serve (no DataFrame, no class labels)."
    from fastai.vision.all import DataBlock, ImageBlock, RegressionBlock, get_image_files, GrandparentSplitter, Resize
    return DataBlock(blocks=(ImageBlock, RegressionBlock), get_items=get_image_files, get_y=digit_value,
                     splitter=GrandparentSplitter(train_name='train', valid_name='valid'), item_tfms=Resize(16))

# -------------------------------------------------------------------- a killed fit, and its resume

def test_a_killed_fit_closes_as_killed_and_its_resume_continues_the_same_mlflow_run(tmp_path, runs):
    """A real SIGKILL after epoch 1's checkpoint: the file still says running, every reader says killed, `mlflow sync`
    closes the MLflow run as KILLED; the resume, in another fresh process, continues that run: one run, each epoch once."""
    job = [sys.executable, str(Path(__file__).parent/'resume_job.py'), 'mlflow', str(tmp_path)]
    cut = subprocess.run(job + ['cut'], capture_output=True, text=True, timeout=600)
    assert cut.returncode == -signal.SIGKILL, cut.stderr[-3000:]
    [f] = runs.glob('*.json')
    m = load_manifest(f)
    assert json.loads(f.read_text())['status'] == 'running' and m['status'] == 'killed'  # on disk as the process left it
    assert m['progress']['last_epoch'] == len(m['results']['epochs']) - 1 == 1  # killed right after epoch 1's checkpoint: epoch 1 is recorded
    for out in (_cli('show', str(f)).stdout, _cli('runs', str(runs)).stdout): assert 'killed (last completed epoch' in out, out
    synced = _cli('mlflow', 'sync', str(runs))
    assert synced.returncode == 0 and 'uploaded 1 run(s)' in synced.stdout, synced.stderr
    client = MlflowClient(default_tracking_uri(runs))
    [killed] = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert (killed.info.status, killed.data.tags['fastrepro.status']) == ('KILLED', 'killed')
    resumed = subprocess.run(job + ['resume'], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0 and resumed.stdout.split()[-1] == killed.info.run_id, resumed.stderr[-3000:]
    [run] = client.search_runs([e.experiment_id for e in client.search_experiments()])  # no second run
    m = load_manifest(f)
    assert (m['status'], run.info.status, run.data.tags['fastrepro.logged']) == ('completed', 'FINISHED', 'complete') and m['resumed_from']
    for name in m['results']['metric_names']:
        assert [h.step for h in client.get_metric_history(run.info.run_id, name)] == [0, 1, 2], name  # each epoch once

# -------------------------------------------------------------------- secrets

SECRETS = dict(GITHUB_TOKEN='ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8', AWS_SECRET_ACCESS_KEY='wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY',
               AWS_ACCESS_KEY_ID='AKIA' + 'IOSFODNN7EXAMPLE', NCCL_SOCKET_IFNAME='AKIA' + 'QWERTYUIOPASDFGH')  # an allow-listed name

def test_no_planted_secret_reaches_the_store(server, runs, tmp_path, monkeypatch):
    for k, v in SECRETS.items(): monkeypatch.setenv(k, v)
    monkeypatch.setenv('NCCL_DEBUG', 'fastrepro-visible-marker-7731')  # allow-listed and harmless: must be found (negative control)
    token = 'alice-s3cr3t-tok3n-9f8e7d'
    learn = _digits(mlflow=MLflowReproCallback(tracking_uri=f'http://alice:{token}@127.0.0.1:{server.port}', log_model=True))
    with learn.no_bar(): learn.fit(1, 1e-2)
    m = load_manifest(last_manifest(learn))
    assert MlflowClient(server.uri).get_run(learn.mlflow_run_id).data.tags['fastrepro.logged'] == 'complete'
    store = [server.root/'server.db', *[p for p in (server.root/'artifacts').rglob('*') if p.is_file()]]
    assert any(p.name == 'export.pkl' for p in store)
    blob = b''.join(p.read_bytes() for p in store)
    assert b'fastrepro-visible-marker-7731' in blob and m['run_id'].encode() in blob  # the search does find what was logged
    for secret in [*SECRETS.values(), token]: assert secret.encode() not in blob, secret

def test_an_early_stopped_save_model_run_is_exported_and_registered(runs):
    """EarlyStoppingCallback stops the fit and SaveModelCallback reloads epoch 0 in its after_fit: the manifest, the export
    and the gate all describe the reloaded weights, so the gate admits the run. Weights changed after the fit are refused."""
    learn = APPS['save_early'].make(0)
    learn.add_cb(MLflowReproCallback(tracking_uri=default_tracking_uri(runs), log_model=True))
    with learn.no_bar(), learn.no_logging(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always'); APPS['save_early'].fit(learn)
    assert not [str(x.message) for x in w if 'export' in str(x.message)]
    m = load_manifest(last_manifest(learn))
    assert (m['status'], m['stopped_early']) == ('completed', {'by': 'EarlyStoppingCallback', 'epoch': 1})
    assert m['results']['final_weights_sha256'] == hash_state_dict(learn.model.state_dict())
    assert any(a['path'].endswith(f"{m['run_id']}.pkl") for a in m['artifacts'])
    assert MlflowClient(default_tracking_uri(runs)).get_run(learn.mlflow_run_id).info.status == 'FINISHED'
    mv = register_model(f'runs:/{learn.mlflow_run_id}', 'best')
    assert mv.tags['fastrepro.final_weights_sha256'] == m['results']['final_weights_sha256']
    with torch.no_grad(): next(learn.model.parameters()).add_(1.)  # the negative control: changed after the fit returned
    with pytest.raises(RegistryGateError, match="weights changed after the fit's manifest"): register_model(learn, 'best')
