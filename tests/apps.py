"""An application matrix: fastai applications built the way fastai's docs and course build them, on small real data.

Each `App` has `make(workers, repro=True)`, which returns a fresh `Learner` (with `ReproCallback(seed=42)` when `repro`,
stock fastai seeded with `set_seed(42, True)` otherwise), `fit(learn)`, which trains it briefly, and `history`, the names
of the `HISTORY` cells that make sense before the fit. `result(learn, steps)` runs steps and returns the sha256 of the
final weights and the per-epoch metrics of every counted fit.

The data ships with Python and scikit-learn (nothing downloads): scikit-learn's digits as PNG folders (a subset),
digit masks written next to them, standard-library docstrings as text, breast-cancer as a table, digits as ratings.

    python tests/apps.py APP [APP ...] [--workers 0] [--start-method spawn] [--history one_batch,validate|all] [--stock]
    python tests/apps.py matrix [--part 0/2]

prints one JSON line `{app: result}` (an app that raises gives `{"error": ...}` and the exit status is 1);
`python tests/apps.py matrix --part 0/2` prints part 0 of 2 of `matrix(all apps)`; `tests/test_apps.py` runs both parts.
Results depend bitwise on torch's thread count: compare runs made with the same `OMP_NUM_THREADS`.
"""
from __future__ import annotations
import argparse, atexit, contextlib, hashlib, importlib, inspect, json, multiprocessing, os, shutil, sys, tempfile, time, traceback
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable
import numpy as np, pandas as pd, torch
from torch import nn
import fastai.torch_core
from fastai.vision.all import (DataBlock, ImageBlock, MaskBlock, CategoryBlock, DataLoaders, ImageDataLoaders, Learner,
                               get_image_files, parent_label, GrandparentSplitter, FuncSplitter, Resize, RandomCrop,
                               FlipItem, aug_transforms, vision_learner, unet_learner, resnet18, accuracy, DiceMulti,
                               MixUp, CutMix, GradientAccumulation, SaveModelCallback, EarlyStoppingCallback)
from fastrepro.callback import ReproCallback
from fastrepro.examples import data_dir, digits_path, digits_dblock, digits_cnn
from fastrepro.fresh import RunRecorder, HISTORY_CELLS
sys.path.insert(0, str(Path(__file__).parent))  # as a script, and under pytest
from helpers import start_method

SEED = 42
N_DIGITS = 200  # the digit images the vision apps use: indices < 200, 160 train and 40 valid (every 5th is valid)

# the cells a user runs before a fit, as fastrepro's own 'history' check runs them, and two that draw and decode batches too
HISTORY = {**HISTORY_CELLS, 'show_batch': lambda l: l.dls.show_batch(max_n=4, show=False), 'summary': lambda l: l.summary()}
ALL_HISTORY = tuple(HISTORY)

@dataclass(frozen=True)
class App:
    name: str
    make: Callable  # make(workers:int, repro:bool=True) -> Learner
    fit: Callable  # fit(learn) -> None
    history: tuple  # names from HISTORY that make sense before the fit
    doc: str = ''

APPS: dict = {}
def _app(name, fit, history=ALL_HISTORY, doc=''):
    def deco(make):
        APPS[name] = App(name, make, fit, tuple(history), doc or (make.__doc__ or '').strip())
        return make
    return deco

# ---------------------------------------------------------------- helpers

_TMP = None
def tmp_dir() -> Path:
    "A scratch folder for this process (checkpoints, encoders), removed at exit."
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix='fastrepro-apps-'))
        atexit.register(shutil.rmtree, _TMP, True)
    return _TMP

def _start(repro, shards:int=None):
    "Seed the model's initialisation as a stock notebook does, and the callbacks for the learner's constructor (`shards`: the elastic mode)."
    fastai.torch_core.set_seed(SEED, True)
    return [ReproCallback(seed=SEED, shards=shards)] if repro else []

def _index(f) -> int: return int(Path(f).stem.split('_')[0])

def digits_subset(path):
    "The digit PNGs under `path` with index < `N_DIGITS`, sorted (fastai's `get_image_files` does not sort)."
    return sorted((f for f in get_image_files(path) if _index(f) < N_DIGITS), key=lambda f: (_index(f), str(f)))

def _atomic_dir(path:Path, write):
    "Write a folder once: into a temporary sibling, then renamed into place (a concurrent writer that won is fine)."
    if path.exists(): return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{path.name}-', dir=path.parent))
    try:
        write(tmp)
        os.rename(tmp, path)
    except OSError:
        if not path.exists(): raise
    finally: shutil.rmtree(tmp, ignore_errors=True)
    return path

# ---------------------------------------------------------------- 1, 2: vision

def _fine_tune(l): l.fine_tune(1, 2e-3, freeze_epochs=1)

@_app('vision_lr_find_fine_tune', _fine_tune)
def make_vision_lr_find_fine_tune(workers:int, repro:bool=True):
    "Lesson one: DataBlock on digit PNGs (Resize 32, RandomCrop 28, aug_transforms), vision_learner(resnet18, pretrained=False), fine_tune."
    cbs = _start(repro)
    dblock = DataBlock(blocks=(ImageBlock, CategoryBlock), get_items=digits_subset, get_y=parent_label,
                       splitter=GrandparentSplitter(train_name='train', valid_name='valid'),
                       item_tfms=[Resize(32), RandomCrop(28)], batch_tfms=aug_transforms(do_flip=False, max_rotate=10.))
    dls = dblock.dataloaders(digits_path(), bs=32, num_workers=workers)
    return vision_learner(dls, resnet18, pretrained=False, metrics=accuracy, cbs=cbs)

@_app('vision_factory', lambda l: l.fit_one_cycle(1, 1e-2))
def make_vision_factory(workers:int, repro:bool=True):
    "ImageDataLoaders.from_path_func(valid_pct=0.2, seed=42) with Resize+RandomCrop item_tfms and aug_transforms; Learner(digits_cnn)."
    cbs = _start(repro)
    path = digits_path()
    dls = ImageDataLoaders.from_path_func(path, digits_subset(path), parent_label, valid_pct=0.2, seed=SEED,
                                          item_tfms=[Resize(20), RandomCrop(16)], batch_tfms=aug_transforms(do_flip=False),
                                          bs=32, num_workers=workers)
    return Learner(dls, digits_cnn(), metrics=accuracy, cbs=cbs)

# ---------------------------------------------------------------- 3: segmentation

SEG_CODES = ['background', 'stroke']
SEG_SCALE, SEG_CROP, SEG_N = 4, 24, 80  # 8x8 digits upscaled to 32x32, cropped to 24x24; 80 items (unet is slow on CPU)
SEG_THRESHOLD = 96  # a pixel is stroke when its 8-bit value is above this (intensity > 6 of 16)

def _write_seg(dest:Path):
    from sklearn.datasets import load_digits
    from PIL import Image
    (dest/'images').mkdir(); (dest/'labels').mkdir()
    for i, img in enumerate(load_digits().images[:SEG_N]):
        v = np.kron((img * 255 / 16).round().astype(np.uint8), np.ones((SEG_SCALE, SEG_SCALE), np.uint8))
        Image.fromarray(v, mode='L').save(dest/'images'/f'{i:04d}.png')
        Image.fromarray((v > SEG_THRESHOLD).astype(np.uint8), mode='L').save(dest/'labels'/f'{i:04d}_P.png')

def seg_path() -> Path:
    "The first `SEG_N` digits upscaled to 32x32 in `images/`, and their masks (0 background, 1 stroke) in `labels/`; written once."
    return _atomic_dir(data_dir()/f'digits_seg_{SEG_N}_{SEG_SCALE}', _write_seg)

def seg_label(f): return Path(f).parent.parent/'labels'/f'{Path(f).stem}_P.png'
def seg_items(path): return sorted(get_image_files(Path(path)/'images'), key=_index)
def _is_valid(f): return _index(f) % 5 == 0

def seg_dblock():
    return DataBlock(blocks=(ImageBlock, MaskBlock(SEG_CODES)), get_items=seg_items, get_y=seg_label,
                     splitter=FuncSplitter(_is_valid), item_tfms=[RandomCrop(SEG_CROP), FlipItem(0.5)])

@_app('segmentation', lambda l: l.fit_one_cycle(1, 1e-3))
def make_segmentation(workers:int, repro:bool=True):
    "DataBlock(ImageBlock, MaskBlock) on digit masks with RandomCrop+FlipItem item_tfms; unet_learner(resnet18, pretrained=False)."
    cbs = _start(repro)
    dls = seg_dblock().dataloaders(seg_path(), bs=16, num_workers=workers)
    return unet_learner(dls, resnet18, pretrained=False, n_out=len(SEG_CODES), metrics=DiceMulti(), cbs=cbs)

def check_mask_alignment(draws:int=2) -> dict:
    """Show that image and mask got the same random crop (and flip): after the item transforms, the mask must equal
    `image > SEG_THRESHOLD` pixel for pixel. `random_crops` counts the items whose crop is neither the centre crop nor
    its mirror (the crop really was random); `shifted_agreement` pairs each mask with its image moved by one pixel,
    a control that shows the check would notice a misalignment."""
    fastai.torch_core.set_seed(SEED, True)
    path = seg_path()
    dls = seg_dblock().dataloaders(path, bs=16, num_workers=0)
    dl = dls.train.new(shuffle=False, drop_last=False)
    from PIL import Image
    m = (SEG_SCALE * 8 - SEG_CROP) // 2
    centres = [np.asarray(Image.open(f))[m:m + SEG_CROP, m:m + SEG_CROP] for f in dls.train_ds.items[:dl.bs]]
    out = dict(aligned=True, pixel_agreement=[], random_crops=[], shifted_agreement=[])
    for _ in range(draws):
        x, y = dl.one_batch()
        pix = (x[:, 0] * 255).round()
        assert (x[:, 0] == x[:, 1]).all() and (x[:, 0] == x[:, 2]).all()  # the grey PNG converted to RGB
        agree = ((pix > SEG_THRESHOLD).long() == y.long()).float().mean().item()
        out['pixel_agreement'].append(agree)
        out['aligned'] &= agree == 1.0
        shifted = (torch.roll(pix, 1, dims=-1) > SEG_THRESHOLD).long() == y.long()
        out['shifted_agreement'].append(shifted.float().mean().item())
        p = pix.numpy().astype(np.uint8)
        out['random_crops'].append(sum(not (np.array_equal(a, c) or np.array_equal(a, c[:, ::-1])) for a, c in zip(p, centres)))
    out['batch'] = int(x.shape[0])
    out['draws_differ'] = None
    if draws > 1:  # two draws of the same items: different crops
        a, b = (dl.one_batch()[0] for _ in range(2))
        out['draws_differ'] = bool((a != b).any())
    return out

# ---------------------------------------------------------------- 4: text (ULMFiT)

TEXT_MODULES = ('contextlib', 'enum', 'inspect', 'itertools', 'logging', 'math', 'os', 'shutil', 'statistics',
                'threading', 'typing', 'urllib.parse')
_CACHE = {}

def docstring_frame() -> pd.DataFrame:
    "Docstrings of the public functions and classes defined in `TEXT_MODULES`: columns text, label (module), is_valid; sorted."
    if 'df' in _CACHE: return _CACHE['df'].copy()
    rows = []
    for m in TEXT_MODULES:
        mod = importlib.import_module(m)
        for name, obj in inspect.getmembers(mod):
            if name.startswith('_') or not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)): continue
            if getattr(obj, '__module__', None) != m: continue
            doc = inspect.getdoc(obj)
            if doc and len(doc) > 40: rows.append((m, name, doc))
    rows.sort()
    df = pd.DataFrame(rows, columns=['label', 'name', 'text'])
    df['is_valid'] = [i % 5 == 0 for i in range(len(df))]
    _CACHE['df'] = df
    return df.copy()

def _awd_config(base, **small):
    c = base.copy(); c.update(small); return c

def lm_config():
    from fastai.text.all import awd_lstm_lm_config
    return _awd_config(awd_lstm_lm_config, emb_sz=64, n_hid=96, n_layers=2)

def clas_config():
    from fastai.text.all import awd_lstm_clas_config
    return _awd_config(awd_lstm_clas_config, emb_sz=64, n_hid=96, n_layers=2)

TEXT_SEQ_LEN = 48

def _cached_dsets(key, dblock_fn):
    "Tokenise (spacy blank English, in worker processes) and numericalise once per process; only the loaders are rebuilt."
    if key not in _CACHE:
        dblock = dblock_fn()
        _CACHE[key] = dblock, dblock.datasets(docstring_frame())
    return _CACHE[key]

def _dataloaders(dblock, dsets, **kwargs):
    "What `DataBlock.dataloaders` does after `datasets`."
    return dsets.dataloaders(after_item=dblock.item_tfms, after_batch=dblock.batch_tfms, **{**dblock.dls_kwargs, **kwargs})

def lm_dblock():
    from fastai.text.all import TextBlock, ColReader, ColSplitter
    return DataBlock(blocks=TextBlock.from_df('text', is_lm=True, seq_len=TEXT_SEQ_LEN), get_x=ColReader('text'),
                     splitter=ColSplitter('is_valid'))

def lm_dls(workers:int):
    return _dataloaders(*_cached_dsets('lm', lm_dblock), bs=16, num_workers=workers, path=tmp_dir())

@_app('text_lm', lambda l: l.fit_one_cycle(1, 2e-2), history=('one_batch', 'show_batch', 'summary', 'validate', 'lr_find'))
def make_text_lm(workers:int, repro:bool=True):
    "TextBlock.from_df(is_lm=True) on stdlib docstrings (LMDataLoader); language_model_learner(AWD_LSTM, small config, pretrained=False)."
    from fastai.text.all import language_model_learner, AWD_LSTM, Perplexity
    cbs = _start(repro)
    dls = lm_dls(workers)
    return language_model_learner(dls, AWD_LSTM, config=lm_config(), pretrained=False, drop_mult=0.5,
                                  metrics=[accuracy, Perplexity()], path=tmp_dir(), cbs=cbs)

def clas_dblock():
    from fastai.text.all import TextBlock, ColReader, ColSplitter
    vocab = lm_dls(0).vocab
    return DataBlock(blocks=(TextBlock.from_df('text', vocab=vocab, seq_len=TEXT_SEQ_LEN), CategoryBlock),
                     get_x=ColReader('text'), get_y=ColReader('label'), splitter=ColSplitter('is_valid'))

def lm_encoder() -> str:
    """Fine-tune the LM once per process (stock fastai, `set_seed(42)`, no workers: the same encoder every time) and save
    its encoder under `tmp_dir()/models`; returns the name for `load_encoder`."""
    if 'encoder' not in _CACHE:
        learn = make_text_lm(0, repro=False)
        with learn.no_bar(), learn.no_logging(): learn.fit_one_cycle(1, 2e-2)
        learn.save_encoder('lm_encoder')
        _CACHE['encoder'] = 'lm_encoder'
    return _CACHE['encoder']

def _ulmfit_fit(l):
    l.fit_one_cycle(1, 2e-2)
    l.freeze_to(-2)
    l.fit_one_cycle(1, slice(1e-2 / (2.6 ** 4), 1e-2))

@_app('text_classifier', _ulmfit_fit)
def make_text_classifier(workers:int, repro:bool=True):
    "TextBlock.from_df(vocab=LM vocab) + CategoryBlock (SortedDL); text_classifier_learner(AWD_LSTM, small config), load_encoder, gradual unfreezing."
    from fastai.text.all import text_classifier_learner, AWD_LSTM
    enc = lm_encoder()  # before the seed: its randomness does not reach this learner
    cbs = _start(repro)
    dls = _dataloaders(*_cached_dsets('clas', clas_dblock), bs=16, num_workers=workers, path=tmp_dir())
    learn = text_classifier_learner(dls, AWD_LSTM, config=clas_config(), pretrained=False, drop_mult=0.5,
                                    metrics=accuracy, path=tmp_dir(), cbs=cbs)
    return learn.load_encoder(enc)  # freezes all but the head, as the course's pretrained classifier is

# ---------------------------------------------------------------- 5: tabular

def cancer_frame() -> pd.DataFrame:
    "scikit-learn's breast cancer set, two continuous columns binned into string categories, a few missing values."
    from sklearn.datasets import load_breast_cancer
    b = load_breast_cancer(as_frame=True)
    df = b.frame.drop(columns='target')
    df['radius_bin'] = pd.qcut(df.pop('mean radius'), 4, labels=['small', 'medium', 'large', 'huge']).astype(str)
    df['texture_bin'] = pd.qcut(df.pop('mean texture'), 3, labels=['smooth', 'average', 'rough']).astype(str)
    df.loc[df.index[::23], 'mean smoothness'] = np.nan  # so FillMissing has work to do
    df['target'] = np.asarray(b.target_names)[b.target.to_numpy()]
    return df

@_app('tabular', lambda l: l.fit_one_cycle(2, 1e-2))
def make_tabular(workers:int, repro:bool=True, bs:int=32, shards:int=None):
    "TabularDataLoaders.from_df(Categorify, FillMissing, Normalize, valid_idx) on breast cancer; tabular_learner(embed_p=0.1, ps=0.1)."
    from fastai.tabular.all import TabularDataLoaders, Categorify, FillMissing, Normalize, tabular_learner, tabular_config
    cbs = _start(repro, shards)
    df = cancer_frame()
    cats = ['radius_bin', 'texture_bin']
    conts = [c for c in df.columns if c not in cats + ['target']]
    dls = TabularDataLoaders.from_df(df, y_names='target', cat_names=cats, cont_names=conts,
                                     procs=[Categorify, FillMissing, Normalize], valid_idx=list(range(0, len(df), 5)),
                                     bs=bs, num_workers=workers)  # `splits=` would be swallowed silently
    return tabular_learner(dls, layers=[64, 32], config=tabular_config(embed_p=0.1, ps=0.1), metrics=accuracy, cbs=cbs)

# ---------------------------------------------------------------- 6: collab

def digit_ratings(n_users:int=300) -> pd.DataFrame:
    "Digits as a ratings matrix: user = image index, item = pixel index 0..63, rating = intensity 0..16."
    from sklearn.datasets import load_digits
    x = load_digits().data[:n_users]
    u, i = np.meshgrid(np.arange(x.shape[0]), np.arange(x.shape[1]), indexing='ij')
    return pd.DataFrame(dict(user=u.ravel(), item=i.ravel(), rating=x.ravel().astype(np.float32)))

@_app('collab', lambda l: l.fit_one_cycle(1, 5e-2, wd=0.1))
def make_collab(workers:int, repro:bool=True):
    "CollabDataLoaders.from_df(valid_pct=0.2, seed=42) on digits as ratings; collab_learner(n_factors=16, y_range=(0, 16.5))."
    from fastai.collab import CollabDataLoaders, collab_learner
    from fastai.metrics import rmse
    cbs = _start(repro)
    dls = CollabDataLoaders.from_df(digit_ratings(), valid_pct=0.2, seed=SEED, user_name='user', item_name='item',
                                    rating_name='rating', bs=256, num_workers=workers)
    return collab_learner(dls, n_factors=16, y_range=(0, 16.5), metrics=rmse, cbs=cbs)

# ---------------------------------------------------------------- 7: callbacks on the digits CNN

def digits_subset_dblock():
    "`fastrepro.examples.digits_dblock()` (crops 16, aug_transforms) on the `N_DIGITS` subset."
    dblock = digits_dblock()
    dblock.get_items = digits_subset
    return dblock

def _digits_learner(workers, repro, bs=32, cbs=(), **kwargs):
    rcbs = _start(repro)
    dls = digits_subset_dblock().dataloaders(digits_path(), bs=bs, num_workers=workers)
    return Learner(dls, digits_cnn(), metrics=accuracy, cbs=list(cbs) + rcbs, **kwargs)

@_app('mixup', lambda l: l.fit_one_cycle(2, 1e-2))
def make_mixup(workers:int, repro:bool=True):
    "digits_dblock + digits_cnn Learner with MixUp()."
    return _digits_learner(workers, repro, cbs=[MixUp()])

@_app('cutmix', lambda l: l.fit_one_cycle(2, 1e-2))
def make_cutmix(workers:int, repro:bool=True):
    "digits_dblock + digits_cnn Learner with CutMix()."
    return _digits_learner(workers, repro, cbs=[CutMix()])

@_app('grad_accum', lambda l: l.fit_one_cycle(1, 1e-2))
def make_grad_accum(workers:int, repro:bool=True):
    "digits_dblock (bs=16) + digits_cnn Learner with GradientAccumulation(n_acc=64)."
    return _digits_learner(workers, repro, bs=16, cbs=[GradientAccumulation(n_acc=64)])

def _fit_save_early(l):
    # Validation loss improves every epoch here, so both callbacks are told what to call better, to make each one act:
    # early stopping ends the fit after epoch 1 of 3 (no gain of 1000), and the "best" model, reloaded at the end, is epoch 0's.
    l.fit(3, 1e-2, cbs=[SaveModelCallback(monitor='valid_loss', comp=np.greater, fname='best'),
                        EarlyStoppingCallback(monitor='valid_loss', min_delta=1e3, patience=1)])

@_app('save_early', _fit_save_early)
def make_save_early(workers:int, repro:bool=True):
    "digits_dblock + digits_cnn Learner; fit(3) with SaveModelCallback + EarlyStoppingCallback: stops after 2 epochs, reloads epoch 0."
    return _digits_learner(workers, repro, path=Path(tempfile.mkdtemp(prefix='save_early-', dir=tmp_dir())), model_dir='models')

def digit_weights(items) -> np.ndarray:
    "Per-item weights: the digits 0 and 1 three times as likely as the others."
    return np.array([3. if parent_label(f) in ('0', '1') else 1. for f in items])

@_app('weighted', lambda l: l.fit_one_cycle(1, 1e-2))
def make_weighted(workers:int, repro:bool=True):
    "digits_dblock.weighted_dataloaders(wgts) (WeightedDL, np.random.choice) + digits_cnn Learner."
    cbs = _start(repro)
    dblock, path = digits_subset_dblock(), digits_path()
    dls = dblock.weighted_dataloaders(path, digit_weights(dblock.get_items(path)), bs=32, num_workers=workers)
    return Learner(dls, digits_cnn(), metrics=accuracy, cbs=cbs)

# ---------------------------------------------------------------- 8: plain PyTorch loaders

class NoisyDigits(torch.utils.data.Dataset):
    "scikit-learn's digits as (1, 8, 8) tensors, each item shifted by up to a pixel and noised, from torch's global RNG."
    def __init__(self, x, y): self.x, self.y = torch.tensor(x, dtype=torch.float32).view(-1, 1, 8, 8) / 16, torch.tensor(y)
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        dy, dx = torch.randint(-1, 2, (2,)).tolist()
        img = torch.roll(self.x[i], shifts=(dy, dx), dims=(1, 2))
        return img + 0.05 * torch.randn_like(img), self.y[i]

def digits_mlp(): return nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))

@_app('plain_torch', lambda l: l.fit_one_cycle(2, 1e-2), history=('validate', 'lr_find'))
def make_plain_torch(workers:int, repro:bool=True):
    "Learner(DataLoaders(torch DataLoader x2, persistent workers)) over a Dataset with random shift+noise per item (torch global RNG); an MLP."
    from sklearn.datasets import load_digits
    cbs = _start(repro)
    d = load_digits()
    idx = np.arange(500)
    trn, val = idx[idx % 5 != 0], idx[idx % 5 == 0]
    # persistent workers, when there are any: PyTorch keeps them from one epoch to the next (fastai's loaders start theirs afresh)
    kw = dict(num_workers=workers, persistent_workers=workers > 0)
    tdl = torch.utils.data.DataLoader(NoisyDigits(d.data[trn], d.target[trn]), batch_size=32, shuffle=True, **kw)
    vdl = torch.utils.data.DataLoader(NoisyDigits(d.data[val], d.target[val]), batch_size=64, shuffle=False, **kw)
    return Learner(DataLoaders(tdl, vdl), digits_mlp(), loss_func=nn.CrossEntropyLoss(), metrics=accuracy, cbs=cbs)

# ---------------------------------------------------------------- the history each app supports

# `show_batch(max_n=4, show=False)` needs no display on any of the fastai loaders here. Left out (set above):
# - text_lm: stock fastai's `LMLearner.get_preds()` raises `IndexError: index 16 is out of bounds for dimension 0 with
#   size 16`: it concatenates predictions along dim 1 and then reorders them by the loader's sequence indices (reorder=True).
# - plain_torch: a torch DataLoader has no `one_batch`/`show_batch`, and `get_preds` calls `dls[1].new(...)`
#   ("AttributeError: 'DataLoader' object has no attribute 'new'"), so its history is validate and lr_find.

# ---------------------------------------------------------------- results

def weights_hash(model) -> str:
    "sha256 over the state_dict: each tensor's name, then its bytes, in order."
    h = hashlib.sha256()
    for k, v in model.state_dict().items():
        h.update(k.encode()); h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()

def result(learn, steps) -> dict:
    "Run `steps` (history cells, then the fit) on `learn`; the weights' sha256 and the per-epoch metrics of every counted fit."
    rec = RunRecorder()
    learn.add_cb(rec)
    with learn.no_bar(), learn.no_logging():
        for step in steps: step(learn)
    return dict(weights=weights_hash(learn.model), epochs=rec.epochs)

def run_app(name:str, workers:int=0, history=(), repro:bool=True, between:bool=False, method:str=None) -> dict:
    """`result(make(workers, repro), [history..., fit])` for the app `name`; with `between`, `[fit, history..., fit]`; with
    `method`, its workers started by that multiprocessing start method."""
    app = APPS[name]
    bad = [h for h in history if h not in app.history]
    if bad: raise ValueError(f"{name} does not support history {bad}; it supports {list(app.history)}")
    cells = [HISTORY[h] for h in history]
    with start_method(method) if method else contextlib.nullcontext():
        return result(app.make(workers, repro=repro), [app.fit] + cells + [app.fit] if between else cells + [app.fit])

# The flows stock fastai breaks (a history cell, or 'w2': 2 workers), which `matrix` also trains without fastrepro.
CONTRAST = {'vision_lr_find_fine_tune': ('lr_find',), 'text_lm': ('one_batch', 'validate'), 'vision_factory': ('w2',)}
BETWEEN = ('vision_factory', 'text_lm', 'tabular')  # apps whose history cells also run between two fits
# The start methods under which an app's 2-worker fit also runs (fork, Linux's default up to Python 3.13, is its 'w2' flow):
# forkserver (Linux's from Python 3.14) and spawn (macOS's and Windows'). Both send each worker its loader pickled, in the same
# way; spawn also makes each worker import this module anew (about 5 CPU-s a worker, two a pass), so it runs on one app, a
# stock Learner with `ReproCallback`, and `repro_learner` runs under all three in `test_contract`.
STARTS = dict(vision_factory=('forkserver', 'spawn'), tabular=('forkserver',), text_lm=('forkserver',), collab=('forkserver',),
              plain_torch=('forkserver',))

def _stock(name, variant):
    "Stock fastai's fit of app `name` after the history cell `variant`, or with 2 workers when `variant` is 'w2'."
    return run_app(name, 2, repro=False) if variant == 'w2' else run_app(name, 0, (variant,), repro=False)

def flows(n) -> dict:
    "The flows of app `n` besides its plain fit, by key: 2 workers (by other start methods too), history before the fit (and between two), stock fastai."
    out = {f'{n}/w2': lambda: run_app(n, 2), f'{n}/history': lambda: run_app(n, 0, APPS[n].history)}
    out.update({f'{n}/w2:{m}': partial(run_app, n, 2, method=m) for m in STARTS.get(n, ())})
    if n in BETWEEN: out.update({f'{n}/two_fits': lambda: run_app(n, between=True),
                                 f'{n}/between': lambda: run_app(n, 0, APPS[n].history, between=True)})
    if n in CONTRAST: out.update({f'stock/{n}/w0': lambda: run_app(n, 0, repro=False),
                                  **{f'stock/{n}/{v}': partial(_stock, n, v) for v in CONTRAST[n]}})
    return out

# Seconds each app's own flows took on two cores (`matrix` prints them); only their rough sizes matter: they balance the parts.
# vision_factory's include its workers started by spawn (about 17 s: each worker imports this module anew).
COST = dict(vision_factory=24, vision_lr_find_fine_tune=13, text_lm=13, segmentation=11, text_classifier=4, tabular=3,
            mixup=2, save_early=2, cutmix=1.5, collab=1.5, plain_torch=1.5, weighted=1, grad_accum=1)

def owners(names, parts:int) -> dict:
    "Each app's part: the costliest apps first, each to the part with the least cost so far."
    load, out = [0] * parts, {}
    for n in sorted(names, key=lambda n: -COST.get(n, 4)):
        out[n] = load.index(min(load)); load[out[n]] += COST.get(n, 4)
    return out

def matrix(names, part:int=0, parts:int=1) -> dict:
    """Part `part` of `parts` of the contract matrix. Each app's `flows` are trained by its own part (`owners`), and its
    plain fit (`app/w0`) by another part, so every flow is compared with a plain fit made in another fresh process."""
    out, own = {}, owners(names, parts)
    for n in names:
        t = time.time()
        if own[n] == part: out.update({k: f() for k, f in flows(n).items()})
        if own[n] != part or parts == 1: out[f'{n}/w0'] = run_app(n, 0)
        print(f"{n}: {time.time() - t:.1f} s", file=sys.stderr)
    return out

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('apps', nargs='+', help=f"app names: {', '.join(APPS)} (or 'all'); 'matrix' runs `matrix` on all of them")
    p.add_argument('--part', default='0/1', help="with 'matrix': the part to run, as PART/PARTS, e.g. 0/2")
    p.add_argument('--workers', type=int, default=0, help='DataLoader worker processes')
    p.add_argument('--start-method', choices=('fork', 'spawn', 'forkserver'), help="how the workers start (default: this Python's)")
    p.add_argument('--history', default='', help="comma-separated HISTORY cells to run before the fit, or 'all' (each app's own)")
    p.add_argument('--stock', action='store_true', help='stock fastai: no ReproCallback')
    a = p.parse_args(argv)
    os.environ.setdefault('FASTREPRO_RUNS', str(tmp_dir()/'runs'))  # manifests: keep them out of the working directory
    # Workers that forkserver starts fork from a server that imported these once: without them, each worker imports fastai
    # anew (a few seconds): forkserver's preload of __main__ was broken until CPython gh-126631 (fixed in 3.14, and in 3.13)
    multiprocessing.set_forkserver_preload(['fastai.vision.all', 'fastai.text.all', 'fastai.tabular.all', 'fastai.collab', 'fastrepro.callback'])
    if a.apps == ['matrix']:
        part, parts = map(int, a.part.split('/'))
        if not 0 <= part < parts: p.error(f"--part must be PART/PARTS with 0 <= PART < PARTS, got {a.part}")
        with contextlib.redirect_stdout(sys.stderr): out = matrix(list(APPS), part, parts)
        print(json.dumps(out)); return 0
    names = list(APPS) if a.apps == ['all'] else a.apps
    unknown = [n for n in names if n not in APPS]
    if unknown: p.error(f"unknown apps {unknown}; known: {list(APPS)}")
    out, failed = {}, False
    for n in names:
        hist = APPS[n].history if a.history == 'all' else [h for h in a.history.split(',') if h]
        try:
            with contextlib.redirect_stdout(sys.stderr):  # fastai prints (SaveModelCallback): stdout is the JSON line only
                out[n] = run_app(n, a.workers, hist, repro=not a.stock, method=a.start_method)
        except Exception as e:
            failed = True
            traceback.print_exc()
            out[n] = dict(error=f"{type(e).__name__}: {e}")
    print(json.dumps(out))
    return 1 if failed else 0

if __name__ == '__main__': sys.exit(main())
