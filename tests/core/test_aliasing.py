"""Values user code hands back may alias gradviz's own buffers: every one must be owned first.

Each Function here returns (or writes into) something gradviz reuses: the grad_output it was
given, the input being perturbed, a view of it, a module-level buffer. Both paths (batched and
one call per row/column) must give PyTorch's Jacobians bit for bit, and the verdict must be
gradcheck's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.autograd import Function

from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.core.numerical_jacobian import numerical_jacobian
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import CheckSettings
from tests.core.test_jacobian import jacobians_both_ways, torch_jacobian
from tests.real_world.oracle import gradcheck_passes
from tests.real_world.oracle import numerical_jacobian as central_differences

CPU = torch.device("cpu")


class PassThrough(Function):
    """Identity with the textbook pass-through backward: returns grad_output itself."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g


class StraightThroughRound(Function):
    """A straight-through estimator: round forward, identity backward. gradcheck fails it."""

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g


class GradientReversal(Function):
    """Domain-adaptation layer: forward returns a view of its input, backward flips the sign."""

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g.neg() * ctx.alpha, None


class FlatView(Function):
    """Forward returns x.view(-1) (a view of the perturbed input); a correct backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g.view(ctx.shape)


class ReturnsInput(Function):
    """Forward returns its input object itself (marked dirty, as autograd requires)."""

    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class ScalesGradOutputInPlace(Function):
    """Backward writes into the grad_output it was given and returns it."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g.mul_(3)


class WrongScaleInPlace(Function):
    """Backward adds into grad_output in place: wrong (gradient 3x + 1 where it is 3)."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g.mul_(3).add_(1)


_BUFFER = torch.zeros(6, dtype=torch.float64)


class ReusesBuffer(Function):
    """Forward writes every result into one module-level buffer and returns it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        torch.mul(x, x, out=_BUFFER)
        return _BUFFER.view(-1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def rand(*shape):
    g = torch.Generator().manual_seed(3)
    return (torch.rand(*shape, generator=g, dtype=torch.float64) * 4 - 2).requires_grad_()


CASES = {
    PassThrough: lambda: (rand(3, 4),),
    StraightThroughRound: lambda: (rand(3, 4),),
    GradientReversal: lambda: (rand(3, 4), 0.5),
    FlatView: lambda: (rand(3, 4),),
    ReturnsInput: lambda: (rand(5),),
    ScalesGradOutputInPlace: lambda: (rand(2, 3),),
    WrongScaleInPlace: lambda: (rand(2, 3),),
}


def gradcheck_verdict(fn, args) -> bool:
    def f(*a):
        return fn.apply(*[t.clone() if isinstance(t, torch.Tensor) else t for t in a])

    return gradcheck_passes(f, args, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_verdict_is_gradchecks(fn):
    args = CASES[fn]()
    prepared = prepare_inputs(args, CPU, torch.float64, [f"in{j}" for j in range(len(args))])
    result = check_function(fn, prepared, CheckSettings())
    assert result.passed == gradcheck_verdict(fn, CASES[fn]())


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_both_paths_give_torchs_jacobians_bit_for_bit(fn):
    a_batched, a_loop, n_batched, n_loop = jacobians_both_ways(fn, CASES[fn]())
    analytic, numerical = torch_jacobian(fn, CASES[fn]()), central_differences(fn, CASES[fn]())
    for key, want in analytic.items():
        np.testing.assert_array_equal(a_batched.blocks[key], a_loop.blocks[key])
        np.testing.assert_array_equal(n_batched.blocks[key], n_loop.blocks[key])
        np.testing.assert_allclose(a_loop.blocks[key], want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(n_loop.blocks[key], numerical[key], rtol=1e-9, atol=1e-9)


def test_a_forward_reusing_one_buffer_gets_its_own_numerical_columns():
    """The two forwards of a column return the same tensor object: each is copied before the next."""
    x = rand(6)
    blocks = numerical_jacobian(ReusesBuffer.apply, (x,), [0], [0], eps=1e-6, batched=False).blocks
    np.testing.assert_allclose(blocks[0, 0], np.diag(2 * x.detach().numpy()), rtol=1e-8, atol=1e-9)


def test_a_returned_view_of_a_buffer_modified_later_is_refused_like_gradcheck():
    """autograd forbids backward through a returned view whose base changed: gradviz names it."""
    prepared = prepare_inputs((rand(6),), CPU, torch.float64, ["x"])
    with pytest.raises(UserCodeError, match="cloning the output") as info:
        check_function(ReusesBuffer, prepared, CheckSettings())
    assert info.value.kind == "backward"
    with pytest.raises(RuntimeError, match="cloning the output"):
        gradcheck_verdict(ReusesBuffer, (rand(6),))


def test_a_wrong_straight_through_estimator_fails_on_exactly_the_diagonal():
    args = CASES[StraightThroughRound]()
    prepared = prepare_inputs(args, CPU, torch.float64, ["x"])
    (block,) = check_function(StraightThroughRound, prepared, CheckSettings()).blocks
    np.testing.assert_array_equal(block.failing, np.eye(12, dtype=bool))
    np.testing.assert_array_equal(block.analytic, np.eye(12))
    np.testing.assert_array_equal(block.numerical, np.zeros((12, 12)))
