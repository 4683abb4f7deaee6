"""Every hint and message says what is true of the case it is given, fed the real case (a real
Function or custom op), its verdict from ``torch.autograd.gradcheck``:

- an analytic Jacobian numerically zero everywhere is "(almost) no gradient", not "every row is
  the same … ignores grad_output";
- a float64 Function that returns float32 is named (the output's dtype costs the precision);
- a custom op's ``Tensor[]`` argument is told what is true of ops (its tensors get gradients,
  gradcheck does not perturb them), in the API and in the CLI, never "call requires_grad_()"; a
  callable's list, what is true of callables;
- the vmap-rule check of a custom op never asks it for a setup_context it cannot have;
- a gradient of the wrong shape names the argument (``y``), as every block does, and its place
  counted from 1; inside a callable, the Function's own argument; in a region too.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.core.check_warnings import OUTPUT_DTYPE
from gradviz.core.hints import ALMOST_NO_GRADIENT, IGNORES_GRAD_OUTPUT
from gradviz.core.inputs import CALLABLE_CONTAINER_INPUT, OP_LIST_INPUT, prepare_inputs
from gradviz.core.region import region_of_function
from gradviz.core.user_code import BAD_GRADIENT
from gradviz.core.vmap_rule import OP_BACKWARD_UNDER_FUNC
from gradviz.schema.settings import DTYPE_DEFAULTS, CheckSettings
from tests.cli.runner import gradviz as run_cli
from tests.real_world import list_ops, registration_ops


class AlmostNoGradient(torch.autograd.Function):
    """sin, whose backward scales its gradient by 1e-14: numerically no gradient at all."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.cos(x) * 1e-14


class ReturnsFloat32(torch.autograd.Function):
    """x² of a float64 x, returned in float32; the backward is right."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x).float()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g.double()


class WrongShape(torch.autograd.Function):
    """x * sum(y), whose backward returns y's gradient summed to one element."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y.sum()

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y.sum(), (g * x).sum().reshape(1)


def scaled(a, b):
    """A callable whose arguments are named otherwise than WrongShape's."""
    return WrongShape.apply(a, b) * 2


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=generator, dtype=torch.float64).requires_grad_()


def test_numerically_zero_backward_is_almost_no_gradient_not_ignored_grad_output():
    x = _x(4)
    assert not torch.autograd.gradcheck(AlmostNoGradient.apply, (x,), raise_exception=False)
    report = gradviz.check(AlmostNoGradient, x, raise_exception=False)
    assert not report.passed
    block = report.result.blocks[0]
    largest, numerical = float(abs(block.analytic).max()), float(abs(block.numerical).max())
    assert 0 < largest <= 1e-12 and numerical > 0.1  # the case of the report
    assert block.hints == [ALMOST_NO_GRADIENT.format(in_name="x", largest=largest, numerical=numerical)]
    assert "The backward returns (almost) no gradient for x" in str(report)
    assert IGNORES_GRAD_OUTPUT.format(in_name="x") not in str(report) and "Every row" not in str(report)


def test_float32_output_of_float64_inputs_is_named():
    x = _x(4)
    expected = torch.autograd.gradcheck(ReturnsFloat32.apply, (x,), raise_exception=False)
    report = gradviz.check(ReturnsFloat32, x, raise_exception=False)
    assert report.passed == expected
    own = DTYPE_DEFAULTS["float32"]
    warning = OUTPUT_DTYPE.format(
        outputs="out0", verb="is", low="float32", dtype="float64", digits=7, eps=own.eps, atol=own.atol, rtol=own.rtol
    )
    assert warning in report.warnings
    assert warning.startswith("out0 is float32 while the inputs are float64: forward returns float32")
    assert not expected  # at these inputs: the output's round-off fails cells, float32's tolerances pass them
    hints = report.result.blocks[0].hints
    assert hints and hints[0].startswith("These cells fail from out0's float32 round-off")
    assert "the backward is right here" in hints[0] and "a term is missing" not in str(report)


def test_op_list_argument_in_the_api_says_what_is_true_of_ops():
    (xs,) = list_ops.example_inputs(torch.device("cpu"), torch.float64)
    with pytest.raises(ValueError, match="none of them have requires_grad=True"):  # gradcheck sees no input
        torch.autograd.gradcheck(list_ops.sum_of_squares, (xs,))
    with pytest.raises(ValueError) as refused:
        gradviz.check(list_ops.sum_of_squares, (xs,))
    said = str(refused.value)
    assert said == OP_LIST_INPUT.format(j=0, name="xs", op="sum_of_squares")
    assert "the op gives them gradients" in said
    assert "requires_grad_()" not in said and "does not track tensors inside containers" not in said
    # what it tells the user to do works, and gives gradcheck's verdict
    expected = torch.autograd.gradcheck(lambda *ts: list_ops.sum_of_squares(list(ts)), tuple(xs))
    assert gradviz.check(lambda *ts: list_ops.sum_of_squares(list(ts)), tuple(xs)).passed == expected


def test_a_callables_list_argument_is_not_told_autograd_ignores_it():
    """A callable that unpacks its list: autograd tracks those tensors; only gradcheck cannot reach them."""
    x = _x(4)

    def through_list(xs):
        return AlmostNoGradient.apply(xs[0])

    through_list([x]).sum().backward()
    assert x.grad is not None  # autograd does give the tensor in the list a gradient
    with pytest.raises(ValueError, match="none of them have requires_grad=True"):
        torch.autograd.gradcheck(through_list, ([x],))
    with pytest.raises(ValueError) as refused:
        gradviz.check(through_list, ([x],))
    assert str(refused.value) == CALLABLE_CONTAINER_INPUT.format(j=0, name="xs")
    assert "does not track" not in str(refused.value) and "requires_grad_()" not in str(refused.value)


def test_op_list_argument_in_the_cli_says_what_is_true_of_ops(tmp_path):
    run = run_cli("check", str(Path(list_ops.__file__)), "--function", "sum_of_squares", cwd=tmp_path)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    said = run.stdout + run.stderr
    assert "Input 0 (xs) is a list holding tensors that require grad (a Tensor[] argument of sum_of_squares)" in said
    assert "the op gives them gradients" in said and "does not track tensors inside containers" not in said


def test_vmap_rule_of_a_custom_op_never_asks_for_setup_context():
    x = registration_ops.example_inputs(torch.device("cpu"), torch.float64)[0]
    report = gradviz.check(registration_ops.square_no_fake, x, check_vmap_rule=True)
    detail = next(c.detail for c in report.result.checks if c.name == "vmap_rule")
    assert OP_BACKWARD_UNDER_FUNC.format(error="RuntimeError") in detail
    assert "must override the setup_context" not in detail
    with pytest.raises(RuntimeError, match="setup_context"):  # PyTorch's own refusal, which the sentence explains
        torch.func.vjp(registration_ops.square_no_fake, x.detach())


def _torch_says_wrong_shape(x: torch.Tensor, y: torch.Tensor) -> tuple[str, str]:
    """gradcheck's own words: the argument whose gradient has the wrong shape (by PyTorch's
    0-based index into forward's arguments after ctx) and the shapes it names."""
    with pytest.raises(RuntimeError) as torch_says:
        torch.autograd.gradcheck(WrongShape.apply, (x, y))
    index = int(re.search(r"invalid gradient at index (\d+)", str(torch_says.value)).group(1))
    name = list(inspect.signature(WrongShape.forward).parameters)[1:][index]
    return name, str(torch_says.value).split(" - ", 1)[-1]


def test_wrong_gradient_shape_names_the_argument():
    x, y = _x(3, 4), _x(3, 4, seed=1)
    name, detail = _torch_says_wrong_shape(x, y)
    assert name == "y"  # PyTorch's index 1: the second argument
    with pytest.raises(gradviz.UserCodeError) as caught:
        gradviz.check(WrongShape, (x, y))
    expected = BAD_GRADIENT.format(who="WrongShape.backward", input="y (its 2nd input)", detail=detail, like="y")
    assert caught.value.message == expected
    assert "index" not in caught.value.message and "position 1" not in caught.value.message


def test_wrong_gradient_shape_inside_a_callable_names_the_functions_own_argument():
    """A callable's own arguments (a, b) are not the Function's: the message names the Function
    whose backward returned the gradient and its forward's parameter (y), counted from 1."""
    x, y = _x(3, 4), _x(3, 4, seed=1)
    name, detail = _torch_says_wrong_shape(x, y)
    with pytest.raises(gradviz.UserCodeError) as caught:
        gradviz.check(scaled, (x, y))
    who = "WrongShape.backward (called in scaled)"
    expected = BAD_GRADIENT.format(who=who, input=f"{name} (its 2nd input)", detail=detail, like=name)
    assert caught.value.message == expected


def test_wrong_gradient_shape_in_a_region_names_the_argument():
    """A region of a block (the window's large-block page) names the input as the check does."""
    x, y = _x(3, 4), _x(3, 4, seed=1)
    name, detail = _torch_says_wrong_shape(x, y)
    prepared = prepare_inputs((x, y), torch.device("cpu"), torch.float64, ["x", "y"])
    with pytest.raises(gradviz.UserCodeError) as caught:
        region_of_function(WrongShape, prepared, CheckSettings(), (0, 1), range(2), range(2))
    expected = BAD_GRADIENT.format(who="WrongShape.backward", input=f"{name} (its 2nd input)", detail=detail, like=name)
    assert caught.value.message == expected


def test_one_cell_off_in_a_symmetric_jacobian_is_no_transposed_factor():
    """x * x has a diagonal Jacobian, unchanged by swapping an output axis with an input axis of
    the same size; a swap that changes nothing must not be offered as the cause."""
    from tests.core import option_functions as fns

    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    assert not torch.autograd.gradcheck(fns.OneCellOff.apply, (x,), raise_exception=False)
    report = gradviz.check(fns.OneCellOff, x, raise_exception=False)
    assert not any("transposed" in h or "swapped" in h for h in report.hints), report.hints
    assert any("x[0,0]" in h for h in report.hints), report.hints
