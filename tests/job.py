"""Train the contract's configurations in this (fresh) process and print one JSON object of results.

`python tests/job.py identity` trains every fit method with 0 and 2 workers, and a tabular learner;
`python tests/job.py history` trains with each history cell run first, and stock fastai for the contrast.
Each result holds the sha256 of the final weights and the per-epoch metrics of every fit.
"""
import hashlib, json, sys, warnings
import fastai.torch_core
from fastai.vision.all import Learner, accuracy
from fastrepro.all import *

warnings.filterwarnings('ignore')
PATH = digits_path()
METHODS = {
    'fit': lambda l: l.fit(1, 1e-2),
    'fit_one_cycle': lambda l: l.fit_one_cycle(1, 1e-2),
    'fine_tune': lambda l: l.fine_tune(1, 1e-2, freeze_epochs=1),
}
HISTORY = {
    'one_batch': lambda l: l.dls.train.one_batch(),
    'show_batch': lambda l: l.dls.show_batch(max_n=4, show=False),
    'lr_find': lambda l: l.lr_find(show_plot=False, num_it=10),
    'summary': lambda l: l.summary(),
    'validate': lambda l: l.validate(),
    'get_preds': lambda l: l.get_preds(),
}

def repro_vision(workers): return repro_learner(digits_dblock(), PATH, seed=42, model=digits_cnn, num_workers=workers, metrics=accuracy)

def stock_vision(workers):
    fastai.torch_core.set_seed(42, True)
    return Learner(digits_dblock().dataloaders(PATH, bs=64, num_workers=workers), digits_cnn(), metrics=accuracy)

def result(learn, steps):
    "Run `steps` on `learn` and return the weights' sha256 and the per-epoch metrics."
    rec = RunRecorder()
    learn.add_cb(rec)
    with learn.no_bar(), learn.no_logging():
        for step in steps: step(learn)
    h = hashlib.sha256()
    for k, v in learn.model.state_dict().items(): h.update(k.encode()); h.update(v.detach().cpu().numpy().tobytes())
    return dict(weights=h.hexdigest(), epochs=rec.epochs)

def identity():
    res = {f'{m}/w{w}': result(repro_vision(w), [f]) for m, f in METHODS.items() for w in (0, 2)}
    res['tabular/fit_one_cycle'] = result(wine_learner(seed=42), [METHODS['fit_one_cycle']])
    res['tabular/fine_tune'] = result(wine_learner(seed=42), [METHODS['fine_tune']])
    return res

def history():
    fit = METHODS['fit_one_cycle']
    res = {'repro/base': result(repro_vision(0), [fit]), 'repro/two_fits': result(repro_vision(0), [fit, fit])}
    for name, h in HISTORY.items():
        res[f'repro/before/{name}'] = result(repro_vision(0), [h, fit])
        res[f'repro/between/{name}'] = result(repro_vision(0), [fit, h, fit])
    res['repro/base/w2'] = result(repro_vision(2), [fit])
    res['stock/base'] = result(stock_vision(0), [fit])
    res['stock/base/w2'] = result(stock_vision(2), [fit])
    for name in ('lr_find', 'one_batch'): res[f'stock/before/{name}'] = result(stock_vision(0), [HISTORY[name], fit])
    return res

if __name__ == '__main__':
    suite = sys.argv[1]
    print(json.dumps({'identity': identity, 'history': history}[suite]()))
