"""One definition of "the same bits" (issue 36, point 2): `fastrepro.bits.same_bits`, which every check calls. Before it,
`verify_reproducible` called 0.0 and -0.0 the same and `verify_resume` did not, and `verify_resume` told two NaNs apart by
their payload while `reproduce` did not. Here each check meets the cases on which the old definitions disagreed, and all
agree now: -0.0 is not 0.0, and a NaN is a NaN."""
import copy, math
import pytest, torch
from fastrepro.bits import same_bits, first_difference
from fastrepro.verify import CheckReport
from fastrepro.resume import first_result_difference
from fastrepro.reproduce import compare_fit
from fastrepro.diff import diff_manifests
from fastrepro.trace import tensor_digest
from fastrepro.fingerprint import hash_state_dict
from fastrepro.manifest import new_manifest, finish_manifest

NAN, NEG_NAN = float('nan'), -float('nan')  # the same NaN but for its sign bit, as a computation can produce either

def verify_says_same(a:float, b:float) -> bool:
    run = lambda v: dict(names=['valid_loss'], epochs=[[v]], losses=[], state={'w': torch.ones(2)}, history=[])
    return CheckReport([run(a), run(b)]).identical

def resume_says_same(a:float, b:float) -> bool:
    res = lambda v: dict(manifests=[dict(randomness=dict(fit=0), status='completed', results=dict(metric_names=['valid_loss'], epochs=[[v]]))],
                         model={'w': torch.ones(2)}, opt={})
    return first_result_difference(res(a), res(b)) is None

def reproduce_says_same(a:float, b:float) -> bool:
    fit = lambda v: dict(results=dict(epochs=[[v]], final_weights_sha256='w'))
    return compare_fit(fit(a), fit(b))['verdict'] == 'bitwise'

M = finish_manifest(new_manifest(seed=0))
def diff_says_same(a:float, b:float) -> bool:  # what sweeps' checks and `fastrepro diff` use
    ma, mb = copy.deepcopy(M), copy.deepcopy(M)
    ma['results'], mb['results'] = dict(final=dict(valid_loss=a)), dict(final=dict(valid_loss=b))
    return not diff_manifests(ma, mb).matters

def diverge_says_same(a:float, b:float) -> bool:  # a trace stores each tensor's digest of its bits
    return tensor_digest(torch.tensor([a])) == tensor_digest(torch.tensor([b]))

CHECKS = dict(verify=verify_says_same, resume=resume_says_same, reproduce=reproduce_says_same, diff=diff_says_same)

@pytest.mark.parametrize('a, b, same', [(0.0, -0.0, False), (NAN, NEG_NAN, True), (NAN, NAN, True), (0.5, 0.5, True),
                                        (0.5, math.nextafter(0.5, 1), False)],
                         ids=['zero-negative-zero', 'nan-negative-nan', 'nan-nan', 'equal', 'one-ulp'])
def test_every_check_agrees_with_same_bits(a, b, same):
    assert same_bits(a, b) == same
    assert {name: says(a, b) for name, says in CHECKS.items()} == {name: same for name in CHECKS}

def test_the_old_definitions_disagreed():
    "What verify (`a == b or both NaN`) and resume (the float's 8 bytes) once said: the negative control for the agreement above."
    old_verify = lambda a, b: a == b or (math.isnan(a) and math.isnan(b))
    old_resume = lambda a, b: torch.tensor(a, dtype=torch.float64).numpy().tobytes() == torch.tensor(b, dtype=torch.float64).numpy().tobytes()
    assert (old_verify(0.0, -0.0), old_resume(0.0, -0.0)) == (True, False)
    assert (old_verify(NAN, NEG_NAN), old_resume(NAN, NEG_NAN)) == (True, False)

def test_tensors_and_weight_hashes_agree():
    "A tensor is its dtype, shape and bytes; `hash_state_dict`, which manifests and sweeps record, hashes exactly those."
    pairs = [({'w': torch.zeros(2)}, {'w': torch.zeros(2, dtype=torch.float64)}), ({'w': torch.zeros(2)}, {'w': torch.zeros(1, 2)}),
             ({'w': torch.tensor([0.0])}, {'w': torch.tensor([-0.0])}), ({'w': torch.ones(2)}, {'w': torch.ones(2)})]
    assert [same_bits(a, b) for a, b in pairs] == [False, False, False, True]
    assert [hash_state_dict(a) == hash_state_dict(b) for a, b in pairs] == [False, False, False, True]
    assert [diverge_says_same(0.0, -0.0), diverge_says_same(1.0, 1.0)] == [False, True]
    assert first_difference({'w': torch.zeros(2)}, {'w': torch.zeros(2), 'v': 1}) == ('v', '<missing>', 1)
