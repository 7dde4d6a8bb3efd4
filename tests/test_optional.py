"""MLflow is an optional extra: without it the core imports and works, and what needs it says how to install it."""
import subprocess, sys, textwrap

def test_the_core_works_without_mlflow():
    code = textwrap.dedent('''
        import sys; sys.modules['mlflow'] = None  # as if it were not installed: `import mlflow` raises ImportError
        import fastrepro.all
        from fastrepro.manifest import load_manifest
        from fastrepro.cli import main
        try: load_manifest('runs:/0123')
        except ImportError as e: print('load:', e)
        try: import fastrepro.mlflow
        except ImportError as e: print('module:', e)
        print('cli exit', main(['show', 'runs:/0123']))
    ''')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    hint = "fastrepro.mlflow needs MLflow: pip install 'fastrepro[mlflow]'"
    assert f'load: {hint}' in r.stdout and f'module: {hint}' in r.stdout
    assert 'cli exit 2' in r.stdout and hint in r.stderr
    assert 'fastrepro.mlflow' not in subprocess.run([sys.executable, '-c', 'import fastrepro.all, sys; print(sorted(sys.modules))'],
                                                    capture_output=True, text=True, timeout=300).stdout
