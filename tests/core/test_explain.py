"""Explanations added to a failing check: kinks marked on failing cells, and the float64 re-check
of a failing lower-precision check. gradcheck stays the judge of every verdict."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradviz.core.check import check_function
from gradviz.core.kinks import jitter_inputs
from gradviz.schema.precision import PRECISION_ONLY, REAL_BUG
from gradviz.schema.settings import DTYPES, CheckSettings, dtype_defaults
from tests.core.why_functions import Abs, CubeNoGradOutput, Tanh, abs_inputs, random_inputs
from tests.real_world.oracle import gradcheck_passes


class SteepExp(torch.autograd.Function):
    """exp(8x) with a backward off by a factor: strongly curved, failing, but nowhere a kink."""

    @staticmethod
    def forward(ctx, x):
        y = torch.exp(8 * x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * 7 * y


def gradcheck(fn, inputs, **tolerances) -> bool:
    return gradcheck_passes(fn.apply, tuple(inputs.args), copies=True, **tolerances)


def test_cells_at_a_kink_are_marked_and_still_fail():
    inputs = abs_inputs()
    result = check_function(Abs, inputs)
    assert result.passed is False is gradcheck(Abs, inputs)
    block = result.blocks[0]
    at_zero = (inputs.args[0].detach() == 0).numpy()
    np.testing.assert_array_equal(block.kinks, np.diag(at_zero))  # exactly the cells at x = 0
    np.testing.assert_array_equal(block.failing, np.diag(at_zero))  # and they fail, as gradcheck says
    assert len(block.hints) == 1 and "kink" in block.hints[0]


def test_jitter_moves_the_inputs_off_the_kink():
    inputs = jitter_inputs(abs_inputs(), 1e-3, seed=0)
    assert not (inputs.args[0] == 0).any()
    result = check_function(Abs, inputs)
    assert result.passed is True is gradcheck(Abs, inputs)


def test_curved_and_wrong_is_not_a_kink():
    result = check_function(SteepExp, random_inputs((5,)))
    assert not result.passed and result.blocks[0].n_kinks == 0
    assert not any("kink" in h for h in result.blocks[0].hints)


def test_float32_failure_of_a_right_backward_is_precision():
    inputs = random_inputs((4, 5), dtype=torch.float32)
    result = check_function(Tanh, inputs, CheckSettings(dtype="float32"))  # gradcheck's eps in float32
    assert not result.passed
    assert result.precision.verdict == PRECISION_ONLY and result.precision.float64_failing == 0
    assert "Fails only in float32" in result.precision.message and result.precision.message in result.warnings
    double = random_inputs((4, 5), dtype=torch.float64)
    assert gradcheck(Tanh, double)  # the oracle agrees: right in float64


def test_float32_failure_of_a_wrong_backward_is_a_real_bug():
    inputs = random_inputs((2, 3), dtype=torch.float32)
    result = check_function(CubeNoGradOutput, inputs, CheckSettings.for_dtype("float32"))
    assert not result.passed
    assert result.precision.verdict == REAL_BUG and result.precision.float64_failing > 0
    assert "real bug" in result.precision.message


def test_no_recheck_in_float64_or_on_a_pass():
    assert check_function(CubeNoGradOutput, random_inputs((2, 3))).precision is None
    assert check_function(Tanh, random_inputs((2, 3), dtype=torch.float32), CheckSettings.for_dtype("float32")).precision is None


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_checks_a_right_backward_with_its_own_defaults(dtype):
    inputs = random_inputs((3, 4), dtype=getattr(torch, dtype))
    result = check_function(Tanh, inputs, CheckSettings.for_dtype(dtype))
    assert result.dtype == dtype and result.passed
    own = dtype_defaults(dtype)
    assert (result.settings.eps, result.settings.atol, result.settings.rtol) == (own.eps, own.atol, own.rtol)


def test_float64_defaults_are_gradchecks():
    assert CheckSettings.for_dtype("float64").tolerance() == CheckSettings().tolerance()
