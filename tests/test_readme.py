"""The README's promises (issue 46, point 5): what the star import gives, the extras it lists, and where the model's
initialisation is keyed. Each test reads the README itself, so a claim that drifts from the code fails here."""
import re, random, tomllib
from pathlib import Path
import numpy as np, torch
from fastai.learner import Learner
from fastai.losses import CrossEntropyLossFlat
import fastrepro.all
from fastrepro.all import ReproCallback, repro_learner, digits_path, digits_dblock, digits_cnn, hash_state_dict

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT/'README.md').read_text()

def table_calls(text:str) -> set:
    """The Python names in the call column of the README's 'I want to' table: `f(...)`, and bare names with an underscore or a capital
    (`seed_sweep`, `TraceCallback`: not the command `torchrun`), but not `learn.method()`."""
    table = text.split('## I want to', 1)[1].split('\n## ', 1)[0]
    cells = [row.split('|')[2] for row in table.splitlines() if row.startswith('| ') and row.count('|') >= 4]
    spans = [s for c in cells[1:] for s in re.findall(r'`([^`]+)`', c)]  # after the header row
    calls = {m for s in spans for m in re.findall(r'(?<![\w.])([A-Za-z_]\w*)\(', s)}
    return calls | {s for s in spans if re.fullmatch(r'[A-Za-z_]\w*', s) and ('_' in s or not s.islower())}

def test_the_star_import_gives_the_tables_calls_but_the_ones_the_readme_names():
    calls = table_calls(README)
    assert {'verify_reproducible', 'ReproCheckpoint', 'seed_sweep', 'TraceCallback', 'register_model'} <= calls  # the parser reads the table
    assert sorted(calls - set(fastrepro.all.__all__)) == ['register_model']
    assert "but for the MLflow extra's `register_model`, from `fastrepro.registry`" in README

def test_the_parser_sees_a_call_the_star_import_lacks():
    "The negative control: a row whose call is not in `fastrepro.all` shows up."
    row = "| export it | `export_learner(learn)`, `learn.export()` | [x](x) |\n"
    fake = README.replace('## I want to…\n\n| I want to… | call | page |\n| --- | --- | --- |\n',
                          '## I want to…\n\n| I want to… | call | page |\n| --- | --- | --- |\n' + row)
    assert fake != README and 'export_learner' in table_calls(fake) - set(fastrepro.all.__all__)

def test_the_extras_line_names_every_extra():
    extras = set(tomllib.loads((ROOT/'pyproject.toml').read_text())['project']['optional-dependencies']) - {'dev'}
    line = next(l for l in README.splitlines() if l.startswith('- **Extras**'))
    assert extras == {'mlflow', 'distributed', 'dvc'} and all(f'fastrepro[{e}]' in line for e in extras)

def _init_weights(make) -> list:
    "The initial weights of `make()` after two different histories of the global generators."
    out = []
    for s in (1, 2):
        random.seed(s); np.random.seed(s); torch.manual_seed(s)
        out.append(hash_state_dict(make().model.state_dict()))
    return out

def test_the_initialisation_is_keyed_where_repro_learner_builds_the_model():
    "The README says so; `ReproCallback` on a Learner built before it does not key the model it was given (the limit the README states)."
    assert "where `repro_learner` builds them, the split and the model's initialisation" in README
    path, dblock = digits_path(), digits_dblock(every=10)
    a = _init_weights(lambda: repro_learner(dblock, path, seed=42, model=digits_cnn, num_workers=0))
    assert a[0] == a[1]
    dls = dblock.dataloaders(path, bs=16, num_workers=0)
    b = _init_weights(lambda: Learner(dls, digits_cnn(), loss_func=CrossEntropyLossFlat(), cbs=ReproCallback(seed=42)))
    assert b[0] != b[1]
