"""A user's namespace (issue 36, point 3): `from fastrepro.all import *` after fastai's own `all`s gives the names a fastai
user calls, about 40, and replaces none of fastai's but `set_seed`, whose fastrepro version takes every call fastai's takes."""
import inspect
import numpy as np, pytest, torch
import fastai.torch_core
import fastrepro.all
from fastrepro.seed import set_seed

APPLICATIONS = ('fastai.vision.all', 'fastai.text.all', 'fastai.tabular.all', 'fastai.collab')  # collab has no `all`

def fastai_namespace() -> dict:
    ns = {}
    for app in APPLICATIONS: exec(f'from {app} import *', ns)
    return ns

def replaced(ns:dict, names) -> list:
    "The names of `ns` that a star import of `names` from fastrepro.all would bind to another object."
    return sorted(n for n in names if n in ns and ns[n] is not getattr(fastrepro.all, n, object()))

def test_fastrepro_all_replaces_no_fastai_name_but_set_seed():
    ns = fastai_namespace()
    before = dict(ns)
    exec('from fastrepro.all import *', ns)
    assert sorted(n for n in before if not n.startswith('__') and ns[n] is not before[n]) == ['set_seed']
    assert replaced(before, fastrepro.all.__all__) == ['set_seed']

def test_the_check_finds_a_replaced_name():
    "The negative control: names fastai already has, such as the old one-word `show` and `lock` of fastrepro's namespace, are found."
    ns = dict(fastai_namespace(), show=print, lock=print)
    assert replaced(ns, ['set_seed', 'show', 'lock', 'Learner']) == ['Learner', 'lock', 'set_seed', 'show']

def test_the_namespace_is_what_users_call():
    names = fastrepro.all.__all__
    assert 30 <= len(names) <= 45 and len(set(names)) == len(names)
    assert all(hasattr(fastrepro.all, n) for n in names)
    assert not [n for n in names if n.isupper() or n.startswith('_')], 'no constants, nothing private'
    one_word = {n for n in names if '_' not in n and not any(c.isupper() for c in n[1:])}
    assert one_word == {'reproduce', 'drill'}, 'one-word names are fastrepro\'s own verbs, never `key`, `show`, `lock` or `sync`'

@pytest.mark.parametrize('call', [lambda f: f(42), lambda f: f(42, True), lambda f: f(42, False), lambda f: f(42, reproducible=True),
                                  lambda f: f(s=42), lambda f: f(-1), lambda f: f(2**32 - 1), lambda f: f(2**64 - 1), lambda f: f(True)],
                         ids=['positional', 'reproducible', 'not-reproducible', 'keyword', 's-keyword', 'negative', '2**32-1', '2**64-1', 'bool'])
def test_set_seed_takes_every_call_fastais_takes(call):
    "The same call seeds the generators the same way: fastai's `set_seed` and fastrepro's draw the same numbers after it (any int torch takes)."
    call(fastai.torch_core.set_seed); a = (np.random.rand(), torch.rand(1).item())
    call(set_seed); b = (np.random.rand(), torch.rand(1).item())
    assert a == b
    fastai_params = list(inspect.signature(fastai.torch_core.set_seed).parameters)
    assert list(inspect.signature(set_seed).parameters)[:len(fastai_params)] == fastai_params

def test_set_seed_refuses_what_fastais_refuses_with_the_reason():
    "The negative control: what fastai's `set_seed` cannot take, fastrepro's refuses too, naming the parameter."
    for bad in (1.5, '3', None, 2**64):
        with pytest.raises(Exception): fastai.torch_core.set_seed(bad)
        with pytest.raises((TypeError, ValueError), match='`s`'): set_seed(bad)
