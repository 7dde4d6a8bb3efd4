"""First-divergence localisation (`fastrepro.diverge`): a non-determinism planted at a known step, phase and module or
parameter is found exactly there, on the digits CNN and on tabular and collab learners; clean runs trace identically,
across DataLoader workers and across fresh processes; bad traces get clear errors; `fastrepro diverge` and `diff` from a shell.

The planted non-determinism draws from OS entropy (`os.urandom`), which no seed controls, so two runs in one process
differ exactly where it acts and nowhere else (fastrepro reseeds every fit). Each planted run is checked against a clean
pair (the negative control of the planted ones: the test can fail) and against where the plant really acted."""
import json, os, subprocess, sys
from functools import partial
from pathlib import Path
import cloudpickle, numpy as np, pytest, torch
from torch import nn
from fastai.callback.core import Callback
from fastai.optimizer import Optimizer, weight_decay, average_grad, average_sqr_grad, step_stat, adam_step
from fastai.vision.all import accuracy, CrossEntropyLossFlat, Transform, PILImage
from fastrepro.manifest import last_manifest
from fastrepro.trace import TraceCallback, TraceError, load_trace
from fastrepro.diverge import compare_traces, find_divergence, _StopAfter
from fastrepro.examples import digits_cnn, digits_dblock, digits_path
from fastrepro.checkpoint import parse_checkpoint_name
from fastrepro.learner import repro_learner
import apps
from helpers import run_cli, start_method

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the fresh processes cannot import this test module
STEPS = 8  # training steps per planted run: the plants act at step 0 or 5

def entropy_noise(shape) -> torch.Tensor:
    "Gaussian noise from OS entropy: different in every run, whatever the seeds."
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), 'little') >> 1)
    return torch.randn(shape, generator=g)

def digits_learner(model=digits_cnn, item_tfm=None, num_workers=0, **kwargs):
    dblock = digits_dblock()
    if item_tfm is not None: dblock.item_tfms = [item_tfm, *dblock.item_tfms]
    return repro_learner(dblock, digits_path(), seed=42, model=model, bs=64, num_workers=num_workers, metrics=accuracy, **kwargs)

def fit_digits(learn): learn.fit_one_cycle(1, 1e-2)

def traced(make, fit, path:Path, what='light', steps=STEPS, **trace_kwargs) -> tuple:
    "Train `fit(make())` in this process for `steps` training steps with a `TraceCallback` writing `path`; return (path, learner)."
    learn = make()
    with learn.no_bar(), learn.no_logging(), learn.added_cbs([TraceCallback(path, what=what, **trace_kwargs), _StopAfter(steps)]): fit(learn)
    return path, learn


def pair(tmp_path, make, fit=fit_digits, what='light', **kwargs):
    "Two in-process runs of `fit(make())`, traced and compared."
    (a, _), (b, lb) = traced(make, fit, tmp_path/'a.jsonl', what, **kwargs), traced(make, fit, tmp_path/'b.jsonl', what, **kwargs)
    return compare_traces(a, b), lb

def where(r): return (r.step, r.phase, r.name, r.part)
def batch(b, epoch=0, fit=0): return dict(fit=fit, epoch=epoch, batch=b)

# ---------------------------------------------------------------- the plants

class NoiseFrom(nn.Module):
    "Identity until its training call `start`, then adds OS-entropy noise."
    def __init__(self, start:int): super().__init__(); self.start, self.calls = start, 0
    def forward(self, x):
        if not self.training: return x
        self.calls += 1
        # 1e-2, not less: at 1e-4 the batch's mean loss rounded to the same float32 in 1 pair of 30, so the light level saw
        # the step first in the gradients, not the loss (measured with 30 and 40 pairs; none of 40 at 1e-2)
        return x if self.calls <= self.start else x + 1e-2 * entropy_noise(x.shape)

class _NoisyBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x): return x.view_as(x)
    @staticmethod
    def backward(ctx, g): return g + 1e-6 * entropy_noise(g.shape)

class NoisyBackward(nn.Module):
    "Identity forward; a backward that adds OS-entropy noise to the gradient flowing to the layers before it."
    def forward(self, x): return _NoisyBackward.apply(x)

def cnn_with(make_module, at:int=3):
    "A `model` for `repro_learner`: the digits CNN with a fresh `make_module()` inserted at `at`."
    def make():
        m = digits_cnn(); m.insert(at, make_module()); return m
    return make

class PerturbItem(Transform):
    "Training-set item transform: replaces one image (found by its pixels) by OS-entropy noise; records its call index."
    order, split_idx = 0, 0  # before Resize and RandomCrop; training loader only
    def __init__(self, pixels:np.ndarray): self.pixels, self.calls, self.hits, self.on = pixels, 0, [], False
    def encodes(self, img:PILImage):
        if not self.on: return img
        self.calls += 1
        if not np.array_equal(np.asarray(img), self.pixels): return img
        self.hits.append(self.calls - 1)
        return PILImage.create(np.frombuffer(os.urandom(self.pixels.size), np.uint8).reshape(self.pixels.shape))

class CountItems(Callback):
    "Switch `PerturbItem` on for training only, counting from 0 at each training epoch (0 workers: items load in batch order)."
    def __init__(self, tfm): self.tfm = tfm
    def before_train(self): self.tfm.on, self.tfm.calls = True, 0
    def after_train(self): self.tfm.on = False

class NoisyLoss(CrossEntropyLossFlat):
    # 1e-3: the two runs' factors must differ in float32 (eps 1.2e-7); at 1e-5 they coincide in about 1 run in 150
    def __call__(self, *args, **kwargs): return super().__call__(*args, **kwargs) * (1 + 1e-3 * entropy_noise(()).item())

def perturb_update_of(param_of):
    "An `opt_func`: fastai's Adam with one more optimizer callback, which perturbs the update of the parameter `param_of(learn)`."
    def set_opt(learn):
        target = param_of(learn)
        def perturb(p, lr, **kwargs):
            if p is target: p.data.add_(1e-6 * entropy_noise(p.shape))
        learn.opt_func = lambda params, lr: Optimizer(params, [weight_decay, partial(average_grad, dampening=True), average_sqr_grad,
                                                               step_stat, adam_step, perturb], lr=lr, mom=0.9, sqr_mom=0.99, eps=1e-5, wd=0.01)
        return learn
    return set_opt

def name_of(learn, p): return next(n for n, q in learn.model.named_parameters() if q is p)

# ---------------------------------------------------------------- 1-6: digits CNN

def test_clean_runs_are_identical_and_the_trace_can_fail(tmp_path):
    r, _ = pair(tmp_path, digits_learner)
    assert r.identical and r.compared == STEPS and r.step is None, r
    assert 'identical' in repr(r)
    # negative control: one flipped digest in B's step 3 is found there
    lines = (tmp_path/'b.jsonl').read_text().splitlines(True)
    step = json.loads(lines[4]); ev = step['events'][7]; ev[3] = ev[3][:-1] + ('0' if ev[3][-1] != '0' else '1')
    lines[4] = json.dumps(step, separators=(',', ':')) + '\n'
    (tmp_path/'b.jsonl').write_text(''.join(lines))
    r = compare_traces(tmp_path/'a.jsonl', tmp_path/'b.jsonl')
    assert not r.identical and r.step == batch(3) and (r.phase, r.name) == tuple(ev[:2]), r

def test_forward_noise_from_step_5(tmp_path):
    r, _ = pair(tmp_path, partial(digits_learner, model=cnn_with(partial(NoiseFrom, 5))), what='full')
    assert where(r) == (batch(5), 'forward', '3', 'output'), r
    assert 'in the forward of `3`' in r.verdict() and "everything before it is identical" in r.verdict()
    light, _ = pair(tmp_path, partial(digits_learner, model=cnn_with(partial(NoiseFrom, 5))))  # the light level: step and phase
    assert (light.step, light.phase) == (batch(5), 'loss'), light

def test_item_noise_at_the_first_batch_holding_the_item(tmp_path):
    path = digits_path()
    from fastai.vision.all import get_image_files
    target = sorted(get_image_files(path/'train'))[100]
    pixels = np.asarray(PILImage.create(target))
    def make():
        tfm = PerturbItem(pixels); learn = digits_learner(item_tfm=tfm); learn.add_cb(CountItems(tfm)); learn.tfm = tfm
        return learn
    (a, la), (b, lb) = traced(make, fit_digits, tmp_path/'a.jsonl', steps=30), traced(make, fit_digits, tmp_path/'b.jsonl', steps=30)
    assert la.tfm.hits and la.tfm.hits[0] // 64 == lb.tfm.hits[0] // 64  # where the item really loaded: the same keyed order
    r = compare_traces(a, b)
    assert (r.step, r.phase, r.part) == (batch(la.tfm.hits[0] // 64), 'data', 'input'), (r, la.tfm.hits)

def test_loss_noise(tmp_path):
    r, _ = pair(tmp_path, partial(digits_learner, loss_func=NoisyLoss()))
    assert where(r) == (batch(0), 'loss', 'loss', ''), r

def test_optimizer_perturbs_one_update(tmp_path):
    param = lambda learn: learn.model[6].bias
    r, learn = pair(tmp_path, lambda: perturb_update_of(param)(digits_learner()))
    assert where(r) == (batch(0), 'weights', name_of(learn, param(learn)), ''), r

def test_nondeterministic_backward(tmp_path):
    r, learn = pair(tmp_path, partial(digits_learner, model=cnn_with(NoisyBackward)))
    before = [n for n, _ in learn.model.named_parameters() if int(n.split('.')[0]) < 3]
    assert where(r) == (batch(0), 'grads', before[-1], ''), r  # backward reaches the last parameter before the module first
    assert before[-1] == '2.1.bias'

def test_workers_0_and_2_identical(tmp_path):
    (a, _), (b, _) = traced(digits_learner, fit_digits, tmp_path/'a.jsonl'), traced(partial(digits_learner, num_workers=2), fit_digits, tmp_path/'b.jsonl')
    assert compare_traces(a, b).identical

# ---------------------------------------------------------------- other applications: tabular and collab

@pytest.mark.parametrize('app', ['tabular', 'collab'])
def test_other_applications(tmp_path, app):
    make, fit = partial(apps.APPS[app].make, 0), apps.APPS[app].fit
    clean, _ = pair(tmp_path, make, fit, what='full')
    assert clean.identical, clean
    last = lambda learn: list(learn.model.parameters())[-1]
    r, learn = pair(tmp_path, lambda: perturb_update_of(last)(make()), fit)
    assert where(r) == (batch(0), 'weights', name_of(learn, last(learn)), ''), r
    def noisy_loss():
        learn = make(); f = learn.loss_func
        learn.loss_func = lambda *a, **k: f(*a, **k) * (1 + 1e-5 * entropy_noise(()).item())  # relative: above float32's rounding
        return learn
    r, _ = pair(tmp_path, noisy_loss, fit)
    assert where(r) == (batch(0), 'loss', 'loss', ''), r

# ---------------------------------------------------------------- fresh processes

def test_fresh_processes_byte_identical_apart_from_the_header(tmp_path):
    "From a process whose start method is forkserver, Linux's default from Python 3.14 (the fresh runs take it on)."
    with start_method('forkserver'): r = find_divergence(digits_learner, fit_digits, max_steps=6, folder=tmp_path, refine=False)
    assert r.identical and r.compared == 6, r
    a, b = [(tmp_path/f'run-{x}.jsonl').read_bytes().split(b'\n', 1) for x in 'ab']
    assert a[1] == b[1] and len(a[1]) > 1000  # every step line, byte for byte
    ha, hb = json.loads(a[0]), json.loads(b[0])
    assert ha['run_id'] != hb['run_id'] and {k for k in ha if ha[k] != hb[k]} <= {'run_id', 'started_at'}

# ---------------------------------------------------------------- bad inputs and the shell

@pytest.fixture(scope='module')
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp('traces')
    traced(digits_learner, fit_digits, d/'a.jsonl', steps=4)
    traced(digits_learner, fit_digits, d/'same.jsonl', steps=4)
    traced(partial(digits_learner, loss_func=NoisyLoss()), fit_digits, d/'noisy.jsonl', steps=4)
    traced(digits_learner, fit_digits, d/'every2.jsonl', steps=4, every=2)
    traced(partial(digits_learner, model=partial(digits_cnn, n_out=11)), fit_digits, d/'other_model.jsonl', steps=4)
    return d

def test_bad_traces(traces, tmp_path):
    a = traces/'a.jsonl'
    with pytest.raises(TraceError, match='recorded with different `every`'): compare_traces(a, traces/'every2.jsonl')
    with pytest.raises(TraceError, match=r'different model structures \(parameter 6.weight \[10, 64\] vs 6.weight \[11, 64\]\)'):
        compare_traces(a, traces/'other_model.jsonl')
    with pytest.raises(FileNotFoundError, match='no trace at'): load_trace(tmp_path/'missing.jsonl')
    (tmp_path/'empty.jsonl').write_text('')
    with pytest.raises(TraceError, match='no complete header'): load_trace(tmp_path/'empty.jsonl')
    lines = a.read_text().splitlines(True)
    (tmp_path/'broken.jsonl').write_text(lines[0] + lines[1][:50] + '\n' + ''.join(lines[2:]))
    with pytest.raises(TraceError, match='line 2: not a step'): load_trace(tmp_path/'broken.jsonl')
    with pytest.raises(ValueError, match='`max_steps` must be a positive int'): find_divergence(digits_learner, fit_digits, max_steps=0)

@pytest.mark.parametrize('cut', [1, 40, 200])
def test_a_killed_runs_trace_compares_up_to_its_last_complete_step(traces, tmp_path, cut):
    raw = (traces/'noisy.jsonl').read_bytes()
    (tmp_path/'killed.jsonl').write_bytes(raw[:-cut])  # the writer died inside the last line
    t = load_trace(tmp_path/'killed.jsonl')
    assert t.truncated and len(t) == 3
    r = compare_traces(traces/'a.jsonl', t)
    assert where(r) == (batch(0), 'loss', 'loss', '')  # still found: it is in a complete step
    r = compare_traces(traces/'noisy.jsonl', t)
    assert r.identical and r.compared == 3 and 'trace B is cut off after its last complete step' in r.verdict(), r

def cli(*args):
    "`fastrepro ARGS` in this process: (exit code, stdout, stderr)."
    r = run_cli(*args)
    return r.returncode, r.stdout, r.stderr

def test_cli_diverge_exit_codes(traces, tmp_path):
    rc, out, _ = cli('diverge', traces/'a.jsonl', traces/'same.jsonl')
    assert rc == 0 and out.startswith('identical'), out
    rc, _, err = cli('diverge', traces/'a.jsonl', tmp_path/'missing.jsonl')
    assert rc == 2 and 'no trace at' in err, err
    rc, _, err = cli('diverge', traces/'a.jsonl', traces/'every2.jsonl')
    assert rc == 2 and 'different `every`' in err, err
    # the console script itself, once
    p = subprocess.run([str(Path(sys.executable).with_name('fastrepro')), 'diverge', traces/'a.jsonl', traces/'noisy.jsonl'],
                       capture_output=True, text=True)
    assert p.returncode == 1 and 'runs part at fit 0, epoch 0, batch 0, in the loss' in p.stdout and '> loss' in p.stdout, p

def test_diff_suggests_the_divergence_check(tmp_path):
    from fastrepro.manifest import load_manifest
    _, learn = traced(digits_learner, fit_digits, tmp_path/'t.jsonl', steps=2)
    m = load_manifest(last_manifest(learn))
    other = json.loads(json.dumps(m)); other['run_id'] += 'x'; other['results']['final_weights_sha256'] = '0' * 64
    (tmp_path/'b.json').write_text(json.dumps(other))
    rc, out, _ = cli('diff', last_manifest(learn), tmp_path/'b.json')
    assert rc == 1 and 'every input layer is identical but the results differ' in out, out
    other['randomness']['seed'] = 7; (tmp_path/'c.json').write_text(json.dumps(other))
    rc, out, _ = cli('diff', last_manifest(learn), tmp_path/'c.json')
    assert rc == 1 and 'seed' in out and 'every input layer is identical' not in out, out  # an input differs: no hint

class NoiseFromStep(nn.Module):
    "Identity until the fit's training step `start` (read from the learner, so it survives a resume), then adds OS-entropy noise."
    def __init__(self, start:int): super().__init__(); self.start, self.learn = start, None
    def forward(self, x):
        if not self.training or self.learn is None or self.learn.train_iter < self.start: return x
        return x + 1e-4 * entropy_noise(x.shape)

def noisy_from_step_12(num_workers=0):
    learn = digits_learner(model=cnn_with(partial(NoiseFromStep, 12)), num_workers=num_workers)
    learn.model[3].learn = learn
    return learn

def test_replay_from_the_last_checkpoint_names_the_module(tmp_path):
    r = find_divergence(noisy_from_step_12, fit_digits, max_steps=16, checkpoint_every=5, folder=tmp_path)
    assert where(r) == (batch(12), 'forward', '3', 'output'), r
    assert '-e0-b10.pth with the full level on step 12' in r.note and 'replayed steps 10..12' in r.note, r.note
    replay = load_trace(tmp_path/'replay-a.jsonl')
    assert [replay.step(i)['step'] for i in range(len(replay))] == [10, 11, 12]  # resumed at step 10, not replayed from 0
    assert {parse_checkpoint_name(p)[1:] for p in (tmp_path/'checkpoints').glob('*.pth')} == {(0, 5), (0, 10), (0, 15)}
