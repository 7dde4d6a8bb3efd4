"""Pipelines with faults that only a truly fresh interpreter reveals, for `tests/test_contract.py`'s negative controls.

A fresh Python process has its own hash seed and draws its own OS entropy. A child forked from a warm parent inherits both
(and a child started with the parent's pinned `PYTHONHASHSEED` shares the hash seed), so a faster "fresh" run built that
way would call both pipelines reproducible, and the two that draw from a global generator before seeding too, unless the
fork draws its entropy again (`fastrepro.warm`). The fresh runs import this module by reference (tests/ is put on their
PYTHONPATH), so each of them executes it, module-level generator included.
"""
import random
import numpy as np, torch
import fastai.torch_core
from fastai.tabular.all import TabularDataLoaders, Normalize, tabular_learner, accuracy
from fastrepro.callback import ReproCallback
from fastrepro.examples import tabular_frame

JITTER = random.Random()  # seeded from OS entropy when this module is imported; no seed of fastai's or fastrepro's reaches it

def _wine(cont_names, seed=1):
    fastai.torch_core.set_seed(seed, True)
    df = tabular_frame('wine')
    dls = TabularDataLoaders.from_df(df, y_names='target', cont_names=cont_names, procs=[Normalize],
                                     valid_idx=list(range(0, len(df), 5)), bs=32)
    return tabular_learner(dls, layers=[16], metrics=accuracy, cbs=ReproCallback(seed=seed))

def features_from_a_set():
    "The feature columns gathered in a set of strings: their order, and so the model's inputs, follows the hash seed."
    return _wine(list({c for c in tabular_frame('wine').columns if c != 'target'}))

def jittered_init():
    "The model's initial weights nudged by a generator created at import time, from OS entropy."
    learn = _wine([c for c in tabular_frame('wine').columns if c != 'target'])
    with torch.no_grad():
        for p in learn.model.parameters(): p.add_(JITTER.gauss(0, 1e-3))
    return learn

def _nudged(nudge):
    learn = _wine([c for c in tabular_frame('wine').columns if c != 'target'])
    with torch.no_grad():
        for p in learn.model.parameters(): p.add_(nudge)
    return learn

def global_random_before_seeding():
    "The initial weights nudged by a draw from Python's global `random` before anything seeded it: a cold start seeds it from OS entropy."
    return _nudged(random.gauss(0, 1e-3))

def numpy_before_seeding():
    "The same with NumPy's legacy global state, which Python's own fork hook does not reseed (`fastrepro.warm.fresh_entropy` does)."
    return _nudged(float(np.random.normal(0, 1e-3)))

def fit(learn): learn.fit(1, 1e-2)
