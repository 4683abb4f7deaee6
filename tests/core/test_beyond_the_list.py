"""Patterns beyond the corpus of buggy twins, each held to gradcheck.

- A forward that reads ``ctx.needs_input_grad`` (or ``requires_grad``) computes something else
  when its inputs are copies that do not require grad: gradviz's forwards must see the inputs as
  gradcheck shows them (grad mode on, copies requiring grad like the originals).
- A forward that returns its input (``mark_dirty``) must get fresh copies for every perturbed
  forward, or autograd refuses the in-place use of a leaf.
- Tensors requiring grad inside a list argument are invisible to autograd: refused clearly
  (gradcheck raises an IndexError there).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.autograd import Function

from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import CheckSettings
from tests.core.functions import InPlaceDouble
from tests.core.test_aliasing import gradcheck_verdict
from tests.real_world.oracle import numerical_jacobian as central_differences

CPU = torch.device("cpu")


class BiasOnlyWhenNeeded(Function):
    """Adds the bias only when autograd will ask for its gradient (seen in hand-written linear layers)."""

    @staticmethod
    def forward(ctx, x, b):
        out = x * 2
        if ctx.needs_input_grad[1]:
            out = out + b
        return out

    @staticmethod
    def backward(ctx, g):
        return 2 * g, g


def inputs(*shapes):
    g = torch.Generator().manual_seed(5)
    return tuple(torch.rand(*s, generator=g, dtype=torch.float64).requires_grad_() for s in shapes)


@pytest.mark.parametrize(("fn", "shapes"), [(BiasOnlyWhenNeeded, [(3,), (3,)]), (InPlaceDouble, [(4,)])])
def test_verdict_warnings_and_numerical_jacobian_match_gradcheck(fn, shapes):
    args = inputs(*shapes)
    prepared = prepare_inputs(args, CPU, torch.float64, [f"in{j}" for j in range(len(args))])
    result = check_function(fn, prepared, CheckSettings())
    assert result.passed == gradcheck_verdict(fn, inputs(*shapes)) is True
    assert not any("not deterministic" in w for w in result.warnings)
    expected = central_differences(fn, inputs(*shapes))
    for b in result.blocks:
        np.testing.assert_allclose(b.numerical, expected[b.output, b.input], rtol=1e-9, atol=1e-9)


def test_a_tensor_requiring_grad_inside_a_list_is_refused():
    x, y = inputs((3,), (3,))
    with pytest.raises(UserCodeError, match="inside containers passed to apply") as info:
        prepare_inputs((x, [y]), CPU, torch.float64, ["x", "others"])
    assert info.value.kind == "example_inputs" and "Input 1 (others)" in info.value.message


def test_fixed_arguments_pass_through_untouched():
    """A fixed float32 tensor, a dict holding an index: as example_inputs made them (no casting)."""
    x = inputs((3,))[0]
    fixed = [torch.ones(3, dtype=torch.float32), {"idx": torch.arange(3)}]
    prepared = prepare_inputs((x, fixed), CPU, torch.float64, ["x", "extra"])
    assert prepared.args[1] is fixed and prepared.args[1][0].dtype == torch.float32


class DriftingBackward(Function):
    """A backward whose factor drifts after its sixth call: not reentrant (gradcheck says so)."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        DriftingBackward.calls += 1
        (x,) = ctx.saved_tensors
        return (2.0 if DriftingBackward.calls <= 6 else 2.5) * x * g


def test_a_backward_that_drifts_with_its_call_count_fails_as_under_gradcheck():
    DriftingBackward.calls = 0
    expected = gradcheck_verdict(DriftingBackward, inputs((4,)))
    DriftingBackward.calls = 0
    prepared = prepare_inputs(inputs((4,)), CPU, torch.float64, ["x"])
    result = check_function(DriftingBackward, prepared, CheckSettings())
    assert result.passed == expected is False
    assert any(c.name == "reentrant" and c.failed for c in result.checks)


class MaskedRelu(Function):
    """Returns the mask too, as a bool tensor: gradcheck raises on it (bool subtraction)."""

    @staticmethod
    def forward(ctx, x):
        mask = x > 0
        ctx.save_for_backward(mask)
        ctx.mark_non_differentiable(mask)
        return x * mask, mask

    @staticmethod
    def backward(ctx, g, _g_mask):
        (mask,) = ctx.saved_tensors
        return g * mask


def test_an_output_gradcheck_cannot_take_is_compared_and_said_so():
    x = (torch.rand(6, dtype=torch.float64) + 0.1).requires_grad_()
    with pytest.raises(RuntimeError, match="bool"):
        gradcheck_verdict(MaskedRelu, (x,))
    result = check_function(MaskedRelu, prepare_inputs((x,), CPU, torch.float64, ["x"]), CheckSettings())
    assert result.passed and [b.output for b in result.blocks] == [0]
    assert any("gradcheck raises on this Function (a bool output)" in n for n in result.notes)


def test_a_self_referencing_list_argument_neither_loops_nor_crashes():
    cfg: list = []
    cfg.append(cfg)
    x = inputs((3,))[0]
    prepared = prepare_inputs((x, cfg), CPU, torch.float64, ["x", "cfg"])
    assert prepared.args[1] is cfg  # fixed arguments pass through untouched
