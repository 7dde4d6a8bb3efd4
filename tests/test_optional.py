"""MLflow and Accelerate are optional extras: without them the core imports and works, and what needs them says how to install them."""
import subprocess, sys, textwrap
from helpers import HANG_S

def test_the_core_works_without_mlflow():
    code = textwrap.dedent('''
        import sys; sys.modules['mlflow'] = None  # as if it were not installed: `import mlflow` raises ImportError
        import fastrepro.all
        from fastrepro.manifest import load_manifest
        from fastrepro.cli import main
        try: load_manifest('runs:/0123')
        except ImportError as e: print('load:', e)  # the entry point for runs: imports fastrepro.mlflow
        try: import fastrepro.mlflow
        except ImportError as e: print('module:', e)
        print('cli exit', main(['show', 'runs:/0123']))
    ''')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    hint = "fastrepro.mlflow needs MLflow: pip install 'fastrepro[mlflow]'"
    assert f'load: {hint}' in r.stdout and f'module: {hint}' in r.stdout
    assert 'cli exit 2' in r.stdout and hint in r.stderr

def test_the_core_works_without_accelerate():
    "A single-process fit never imports fastrepro.distributed (nor fastai.distributed, which needs Accelerate)."
    code = textwrap.dedent('''
        import sys; sys.modules['accelerate'] = None
        from fastai.test_utils import synth_learner
        from fastrepro.all import ReproCallback
        learn = synth_learner(cbs=ReproCallback(seed=1, record=False))
        learn.fit(1)
        print('imported', sorted(m for m in sys.modules if m.endswith('.distributed') and m.startswith('fast')))
        print('mlflow imported:', 'fastrepro.mlflow' in sys.modules)  # MLflow is installed here: fastrepro.all still leaves it out
        try: import fastrepro.distributed
        except ImportError as e: print('module:', e)
    ''')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    assert 'imported []' in r.stdout and 'mlflow imported: False' in r.stdout
    assert "module: fastrepro.distributed needs Accelerate, on which fastai's distrib_ctx runs: pip install 'fastrepro[distributed]'" in r.stdout

def test_the_core_works_without_dvc():
    "dvc is imported only for data inside a DVC repository: a fit on other data records as before, and never imports it."
    code = textwrap.dedent('''
        import sys; sys.modules['dvc'] = sys.modules['dvc.repo'] = None  # as if it were not installed
        from fastai.test_utils import synth_learner
        from fastrepro.all import ReproCallback
        from fastrepro.dvc import data_version
        learn = synth_learner(cbs=ReproCallback(seed=1, record=False))
        learn.fit(1)
        print('dvc imported:', any(m.startswith('dvc') and sys.modules[m] is not None for m in sys.modules))
        print('outside DVC:', data_version('.'))
    ''')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=HANG_S, cwd='/')
    assert r.returncode == 0, r.stderr
    assert 'dvc imported: False' in r.stdout and 'outside DVC: None' in r.stdout, r.stdout
