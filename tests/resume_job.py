"""Fresh-process jobs for tests/test_resume.py.

`python tests/resume_job.py stock DIR full`     stock fastai, `fit_one_cycle(2)` uninterrupted, twice (each seeded as the docs say);
                                                prints the weights' sha256 of each
`python tests/resume_job.py stock DIR cut`      the same fit, `learn.save('cut', with_opt=True)` after epoch 0, then SIGKILL
`python tests/resume_job.py stock DIR resume`   stock fastai's resume: `learn.load('cut', with_opt=True)`, `fit_one_cycle(2, start_epoch=1)`
`python tests/resume_job.py writer DIR`         checkpoints after every batch, with a large model, until killed from outside
`python tests/resume_job.py mlflow DIR cut`     `fit_one_cycle(3)` logged to MLflow (DIR/mlflow.db), SIGKILLed after epoch 1's checkpoint
`python tests/resume_job.py mlflow DIR resume`  `learn.resume()` of that fit; prints its MLflow run id
"""
import os, signal, sys, warnings
from pathlib import Path
from torch import nn
import fastai.torch_core
from fastai.vision.all import Learner, Callback, accuracy
from fastrepro.all import digits_dblock, digits_path, digits_cnn, repro_learner, hash_state_dict
from fastrepro.checkpoint import ReproCheckpoint
from fastrepro.resume import _KillAfter

warnings.filterwarnings('ignore')

def stock(folder, mode):
    "Stock fastai, seeded as its docs say; every mode builds the learner identically."
    fastai.torch_core.set_seed(42, True)
    learn = Learner(digits_dblock(every=3).dataloaders(digits_path(), bs=64, num_workers=0), digits_cnn(), metrics=accuracy)
    learn.model_dir = Path(folder)/'models'
    with learn.no_bar(), learn.no_logging():
        if mode == 'full': learn.fit_one_cycle(2, 1e-2)
        elif mode == 'cut': learn.fit_one_cycle(2, 1e-2, cbs=SaveThenKill())
        else:
            learn.load('cut', with_opt=True)
            learn.fit_one_cycle(2, 1e-2, start_epoch=1)
    return hash_state_dict(learn.model.state_dict())

class SaveThenKill(Callback):
    "After epoch 0, save model and optimizer as fastai does, then die as a preempted job does."
    order = 99
    def after_epoch(self):
        if self.epoch == 0: self.learn.save('cut', with_opt=True); os.kill(os.getpid(), signal.SIGKILL)

class Big(nn.Module):
    "The digits CNN with a large unused layer, so each checkpoint takes long enough to write that a kill can land inside it."
    def __init__(self):
        super().__init__()
        self.cnn, self.ballast = digits_cnn(), nn.Linear(2048, 2048)
    def forward(self, x): return self.cnn(x)

def writer(folder):
    learn = repro_learner(digits_dblock(), digits_path(), seed=42, model=Big, num_workers=0, metrics=accuracy)
    learn.model_dir = Path(folder)/'models'
    with learn.no_bar(), learn.no_logging(): learn.fit(100, 1e-3, cbs=ReproCheckpoint(every=1, keep=2))

def mlflow(folder, mode):
    learn = repro_learner(digits_dblock(every=3), digits_path(), seed=42, model=digits_cnn, num_workers=0, metrics=accuracy, mlflow=True)
    learn.model_dir = Path(folder)/'models'
    with learn.no_bar(), learn.no_logging():
        if mode == 'cut': learn.fit_one_cycle(3, 1e-2, cbs=[ReproCheckpoint(), _KillAfter(2)])
        else: learn.resume()
    print(learn.mlflow_run_id)

if __name__ == '__main__':
    os.environ.setdefault('FASTREPRO_RUNS', str(Path(sys.argv[2])/'runs'))
    if sys.argv[1] == 'stock': print(*[stock(sys.argv[2], sys.argv[3]) for _ in range(2 if sys.argv[3] == 'full' else 1)])
    elif sys.argv[1] == 'mlflow': mlflow(sys.argv[2], sys.argv[3])
    else: writer(sys.argv[2])
