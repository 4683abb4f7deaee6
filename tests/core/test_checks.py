"""gradcheck's checks besides the Jacobian: each agrees with the part of gradcheck/gradgradcheck it mirrors."""

from __future__ import annotations

import pytest
import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.core.loader import choose_function, load_file
from gradviz.schema.library import builtin_functions
from gradviz.schema.results import DECLARED, FAILED, PASSED
from gradviz.schema.settings import CheckSettings
from tests.real_world.oracle import gradcheck_passes

CPU = torch.device("cpu")


class Noisy(Function):
    """Backward adds noise: not reentrant."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3 + torch.rand_like(g) * 1e-3


class NoNoneHandling(Function):
    """set_materialize_grads(False) but backward does not handle None."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class Offset(Function):
    """A zero output gradient still gives a non-zero input gradient."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g + (g == 0).to(g.dtype)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


def run_checks(fn, *args):
    prepared = prepare_inputs(args, CPU, torch.float64, [f"in{j}" for j in range(len(args))])
    result = check_function(fn, prepared, CheckSettings(all_checks=True))
    return {c.name: c for c in result.checks}, result


def x():
    return torch.rand(4, dtype=torch.float64, requires_grad=True)


def gradcheck(fn, *args, **kw) -> bool:
    """gradcheck's verdict; an exception out of the user's backward counts as a failure too."""
    opts = dict(eps=1e-6, atol=1e-5, rtol=1e-3, check_batched_grad=False)
    # quiet: gradcheck's "backwards compatibility" note
    return gradcheck_passes(fn.apply, args, quiet=True, failing_on=(RuntimeError, TypeError), **{**opts, **kw})


def test_non_reentrant_backward_fails_like_gradcheck():
    checks, result = run_checks(Noisy, x())
    assert checks["reentrant"].status == FAILED and "not reentrant" in checks["reentrant"].detail
    assert not result.passed
    assert not gradcheck(Noisy, x(), check_undefined_grad=False)


def test_undefined_grad_not_handled_fails_like_gradcheck():
    checks, _ = run_checks(NoNoneHandling, x())
    assert checks["undefined_output_grads"].status == FAILED
    assert "TypeError" in checks["undefined_output_grads"].detail
    assert not gradcheck(NoNoneHandling, x(), check_undefined_grad=True)


def test_zero_output_grad_giving_nonzero_fails_like_gradcheck():
    checks, _ = run_checks(Offset, x())
    assert checks["multiplied_by_grad_output"].status == FAILED
    assert not gradcheck(Offset, x(), check_undefined_grad=True)


def test_once_differentiable_is_declared_not_failed():
    checks, result = run_checks(Cube, x())
    assert checks["double_backward"].status == DECLARED
    assert result.passed


@pytest.mark.parametrize("entry", builtin_functions(), ids=lambda e: e.name)
def test_double_backward_agrees_with_gradgradcheck(entry):
    loaded = load_file(entry.path)
    fn = choose_function(loaded)
    torch.manual_seed(0)
    raw = loaded.example_inputs(CPU, torch.float64)
    prepared = prepare_inputs(raw, CPU, torch.float64, ["a"] * len(raw))
    result = check_function(fn, prepared, CheckSettings(all_checks=True))
    status = {c.name: c.status for c in result.checks}
    expected = torch.autograd.gradgradcheck(
        fn.apply, prepared.args, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False
    )
    assert status["double_backward"] == (PASSED if expected else FAILED)
    assert status["reentrant"] == status["undefined_output_grads"] == status["multiplied_by_grad_output"] == PASSED
