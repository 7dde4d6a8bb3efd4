"""Force the first hex digit of every `uuid.uuid4()` in this interpreter and its children.

Run ids, sweep labels and registry folders end in `uuid4().hex[:n]`, so a parser or a test that reads those names
by string splitting fails only when the random hex happens to begin with a particular digit (1 run in 16).
This makes that digit certain:

    PYTHONPATH=tools/forced_ids FASTREPRO_FORCE_HEX=e pytest -m "not slow" tests

Every child process inherits PYTHONPATH and the variable, so fresh runs, sweeps and torchrun ranks are forced too.
"""
import os, uuid

_digit = os.environ.get('FASTREPRO_FORCE_HEX', '')
if _digit:
    if len(_digit) != 1 or _digit not in '0123456789abcdef':
        raise ValueError(f"FASTREPRO_FORCE_HEX must be one hex digit, got {_digit!r}")
    _uuid4 = uuid.uuid4
    def uuid4():
        u = _uuid4()
        return uuid.UUID(hex=_digit + u.hex[1:], version=4)  # version=4 rewrites digit 12, never the first
    uuid.uuid4 = uuid4
