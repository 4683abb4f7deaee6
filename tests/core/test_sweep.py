"""The eps sweep against PyTorch: slopes, verdicts and the eps it suggests.

PyTorch is the oracle: reference error curves come from central differences computed here with
plain torch calls against ``torch.autograd.functional.jacobian``, and a suggested eps is judged
by ``torch.autograd.gradcheck`` itself.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gradviz.core.check import check_function, check_source
from gradviz.core.loader import choose_function, load_file
from gradviz.core.prepare import example_arguments
from gradviz.core.sweep import sweep_function, sweep_source
from gradviz.schema.errors import Cancelled, SettingsError
from gradviz.schema.library import builtin_functions
from gradviz.schema.settings import SWEEP_STEPS, CheckSettings, SweepOptions
from gradviz.schema.sweep import SweepResult, Verdict
from tests.core.why_functions import Abs, MatMul, Tanh, abs_inputs, random_inputs

BUGGY = [e for e in builtin_functions() if e.bug]


def reference_errors(fn, x: torch.Tensor, steps, dtype) -> list[float]:
    """max |central difference(h) - functional.jacobian| for every step, by plain torch calls."""
    x = x.detach().to(dtype)
    analytic = torch.autograd.functional.jacobian(fn.apply, x.double()).reshape(x.numel(), x.numel())
    errors = []
    for h in steps:
        columns = []
        for c in range(x.numel()):
            plus, minus = x.clone(), x.clone()
            plus.view(-1)[c] += h
            minus.view(-1)[c] -= h
            with torch.no_grad():
                columns.append(((fn.apply(plus) - fn.apply(minus)) / (2 * h)).reshape(-1))
        numerical = torch.stack(columns, dim=1).double()
        errors.append(float((numerical - analytic).abs().max()))
    return errors


def test_correct_function_has_slope_two_and_a_valley_between_truncation_and_round_off():
    inputs = random_inputs((4, 5))
    sweep = sweep_function(Tanh, inputs)
    block = sweep.block(0, 0)
    assert sweep.verdict == Verdict.BACKWARD_RIGHT == block.verdict
    assert block.remainder_slope == pytest.approx(2.0, abs=0.1)
    assert block.curvature_slope == pytest.approx(2.0, abs=0.1)
    assert block.truncation_slope == pytest.approx(2.0, abs=0.2)
    assert block.roundoff_slope == pytest.approx(-1.0, abs=0.3)
    # the valley sits inside the range, orders of magnitude below both ends
    best = sweep.steps.index(block.best_eps)
    assert 0 < best < len(sweep.steps) - 1
    assert block.errors[best] < 1e-3 * min(block.errors[0], block.errors[-1])
    # the curve is PyTorch's: central differences against functional.jacobian, step by step
    expected = reference_errors(Tanh, inputs.args[0], sweep.steps, torch.float64)
    for h, got, want in zip(sweep.steps, block.errors, expected):
        if h >= 1e-5:  # truncation: the same arithmetic gives the same number
            assert got == pytest.approx(want, rel=1e-5), h
        else:  # round-off: an ulp of difference in f moves the error, but not its size
            assert want / 3 <= got <= want * 3, h


@pytest.mark.parametrize("entry", BUGGY, ids=lambda e: e.name)
def test_every_buggy_twin_is_backward_wrong(entry):
    loaded = load_file(entry.path)
    sweep = sweep_source(loaded)
    assert sweep.verdict == Verdict.BACKWARD_WRONG, sweep.message
    check = check_source(loaded)
    for block in sweep.blocks:  # wrong exactly where the check fails, with remainder slope 1
        failing = not check.block(block.output, block.input).passed
        assert (block.verdict == Verdict.BACKWARD_WRONG) == failing, block.message
        if failing:
            assert block.remainder_slope == pytest.approx(1.0, abs=0.1)


@pytest.mark.filterwarnings("ignore:Input #0 requires gradient and is not a double")
def test_float32_at_gradchecks_eps_is_eps_too_small_and_the_suggested_eps_passes_gradcheck():
    settings = CheckSettings(dtype="float32")  # gradcheck's eps=1e-6, atol, rtol: too fine for float32
    inputs = random_inputs((4, 5), dtype=torch.float32)
    leaf = inputs.args[0]
    assert not torch.autograd.gradcheck(Tanh.apply, (leaf,), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False)
    sweep = sweep_function(Tanh, inputs, settings)
    assert sweep.verdict == Verdict.EPS_TOO_SMALL, sweep.message
    assert "round-off" in sweep.message and sweep.best_eps > 1e-5
    assert sweep.block(0, 0).remainder_slope == pytest.approx(2.0, abs=0.2)
    assert torch.autograd.gradcheck(
        Tanh.apply, (leaf,), eps=sweep.best_eps, atol=1e-5, rtol=1e-3, raise_exception=False
    )
    again = check_function(Tanh, inputs, CheckSettings(dtype="float32", eps=sweep.best_eps))
    assert again.passed


def test_abs_at_zero_is_non_differentiable():
    sweep = sweep_function(Abs, abs_inputs())
    assert sweep.verdict == Verdict.NON_DIFFERENTIABLE, sweep.message
    assert sweep.block(0, 0).curvature_slope == pytest.approx(1.0, abs=0.1)
    # away from the kink the same Function is right
    moved = sweep_function(Abs, random_inputs((6,)))
    assert moved.verdict == Verdict.BACKWARD_RIGHT, moved.message


def test_a_wide_block_is_swept_on_the_worst_and_random_columns():
    inputs = random_inputs((8, 8), (8, 8))
    options = SweepOptions(block=(0, 0), max_columns=16)
    sweep = sweep_function(MatMul, inputs, options=options)
    block = sweep.block(0, 0)
    assert block.columns == 16 and block.swept
    assert not sweep.block(0, 1).swept  # another block: the directional test only
    assert sweep.verdict == Verdict.BACKWARD_RIGHT


def test_a_64x64_block_sweeps_in_one_call_per_chunk():
    """The 8x8 @ 8x8 matmul: 64x64 blocks, every column at every step, on the batched path."""
    sweep = sweep_function(MatMul, random_inputs((8, 8), (8, 8)))
    assert [b.shape for b in sweep.blocks] == [(64, 64), (64, 64)]
    assert all(b.columns == 64 for b in sweep.blocks)
    assert sweep.path == "batched" and sweep.verdict == Verdict.BACKWARD_RIGHT


def test_unknown_block_is_refused_with_the_blocks_listed():
    with pytest.raises(SettingsError, match=r"0,0 \(out0 / in0\)"):
        sweep_function(Tanh, random_inputs((3,)), block=(0, 3))


def test_sweep_result_survives_strict_json():
    sweep = sweep_source(load_file(BUGGY[0].path))
    back = SweepResult.from_dict(json.loads(json.dumps(sweep.to_dict(), allow_nan=False)))
    assert back.to_dict() == json.loads(json.dumps(sweep.to_dict(), allow_nan=False))
    assert back.verdict == sweep.verdict and back.steps == sweep.steps


def test_the_checks_eps_is_always_a_step():
    sweep = sweep_function(Tanh, random_inputs((3,)), CheckSettings(eps=2e-6))
    assert 2e-6 in sweep.steps and set(SWEEP_STEPS) <= set(sweep.steps)
    assert sweep.steps == sorted(sweep.steps, reverse=True)


def test_check_verdicts_do_not_depend_on_the_explanations():
    """Kinks and the precision re-check add notes; the verdict and every failing cell stay gradcheck's."""
    cases = [(Abs, abs_inputs(), "float64"), (Tanh, random_inputs((4, 5), dtype=torch.float32), "float32")]
    for entry in BUGGY:
        loaded = load_file(entry.path)
        fn = choose_function(loaded)
        cases.append((fn, example_arguments(loaded, fn, torch.device("cpu"), torch.float64, 0), "float64"))
    for fn, inputs, dtype in cases:
        explained = check_function(fn, inputs, CheckSettings(dtype=dtype))
        plain = check_function(fn, inputs, CheckSettings(dtype=dtype, explain=False))
        assert explained.passed == plain.passed
        for a, b in zip(explained.blocks, plain.blocks):
            np.testing.assert_array_equal(a.failing, b.failing)
            assert b.kinks is None


def test_progress_reaches_its_total_and_cancel_stops_the_sweep():
    seen = []
    sweep_function(MatMul, random_inputs((4, 4), (4, 4)), progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        sweep_function(MatMul, random_inputs((4, 4), (4, 4)), cancel=cancel)


def test_plain_calls_only_give_the_same_sweep():
    """batched=False (a Function that reads .data, or a run that died under vmap): one call per copy."""
    inputs = random_inputs((3, 4))
    batched = sweep_function(Tanh, inputs)
    plain = sweep_function(Tanh, inputs, CheckSettings(batched=False))
    assert (batched.path, plain.path) == ("batched", "loop")
    assert plain.verdict == batched.verdict and plain.best_eps == batched.best_eps
    np.testing.assert_allclose(plain.block(0, 0).errors[:8], batched.block(0, 0).errors[:8], rtol=1e-6)


def test_a_callable_built_on_functions_sweeps_too():
    """What gradviz.check accepts (a callable dressed by core.callables) is what sweep_function accepts."""
    from gradviz.core.callables import CallableFunction

    fn = CallableFunction(lambda x: Tanh.apply(x) * 2, "twice_tanh")
    sweep = sweep_function(fn, random_inputs((3, 4)))
    assert sweep.function == "twice_tanh" and sweep.verdict == Verdict.BACKWARD_RIGHT
