"The per-file hash cache under concurrent processes, and fingerprints against an independent sha256."
import hashlib, json, os, sqlite3, subprocess, sys
from pathlib import Path
from helpers import HANG_S

FP = "import json, sys; from fastrepro.fingerprint import fingerprint_folder; print(json.dumps(fingerprint_folder(sys.argv[1])))"

def _tree(root, n=300):
    for i in range(n):
        d = root/f'c{i % 7}'; d.mkdir(parents=True, exist_ok=True)
        (d/f'{i:04d}.bin').write_bytes(hashlib.sha256(str(i).encode()).digest() * (1 + i % 5))

def _expected(root):
    "The fingerprint recomputed independently: hashlib over sorted relative paths."
    pairs = sorted((p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
                   for p in root.rglob('*') if p.is_file())
    h = hashlib.sha256()
    for name, digest in pairs: h.update(f"{name}\0{digest}\n".encode())
    return dict(sha256=h.hexdigest(), n=len(pairs))

def test_concurrent_processes_share_the_cache(tmp_path):
    data, cache = tmp_path/'data', tmp_path/'cache'
    _tree(data)
    env = {**os.environ, 'FASTREPRO_CACHE': str(cache)}
    procs = [subprocess.Popen([sys.executable, '-c', FP, str(data)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(8)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=HANG_S)
        assert p.returncode == 0, err[-2000:]
        outs.append(json.loads(out))
    assert all(o == _expected(data) for o in outs)
    db = sqlite3.connect(cache/'hashes.sqlite')
    assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
    assert db.execute('SELECT count(*) FROM files').fetchone()[0] == 300

def test_cache_env_var_and_change_detection(tmp_path, monkeypatch):
    monkeypatch.setenv('FASTREPRO_CACHE', str(tmp_path/'c'))
    from fastrepro.fingerprint import fingerprint_folder, cache_dir
    data = tmp_path/'data'; _tree(data, 50)
    first = fingerprint_folder(data)
    assert cache_dir() == tmp_path/'c' and (tmp_path/'c'/'hashes.sqlite').exists()
    victim = sorted(data.rglob('*.bin'))[10]
    victim.write_bytes(victim.read_bytes() + b'x')
    second = fingerprint_folder(data)
    assert second != first and second == _expected(data)
