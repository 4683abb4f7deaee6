"""Functions with a forward-mode formula (``jvp``), right and wrong, and ops without one.

The patterns of PyTorch's forward-AD documentation (``torch/autograd/function.py``,
"Extending torch.autograd": ``ctx.save_for_forward`` in forward, ``jvp(ctx, *tangents)``), with
``setup_context`` and with several inputs and outputs. A wrong ``jvp`` passes
``torch.autograd.gradcheck`` by default (only the backward is checked) and fails it with
``check_forward_ad=True``. ``numpy_jvp`` is right but leaves torch in its jvp, so gradcheck's
``check_batched_forward_grad`` (the prototype vmap) fails on it. The custom op has a right backward
and no forward formula: forward AD gives its output no tangent at all.

Source: pytorch/pytorch, torch/autograd/function.py and docs/source/notes/extending.rst (the jvp
staticmethod, ``ctx.save_for_forward``), written here in this project's own words.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.autograd import Function


class SinJvp(Function):
    """sin with backward and jvp, both right."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * x.cos()


class SinWrongJvp(SinJvp):
    """Right backward, jvp off by a factor: only check_forward_ad sees it."""

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return 1.5 * tangent * x.cos()


class SinNoJvp(Function):
    """Right backward and no jvp: forward AD raises NotImplementedError."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class SinRightJvpWrongBackward(SinJvp):
    """Right jvp, wrong backward: passes gradcheck(check_forward_ad=True, check_backward_ad=False)."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * x.cos()


class CubeSetupContext(Function):
    """x**3 in the setup_context style (forward without ctx); works under torch.func too."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * 3 * x**2


class CubeSetupContextWrongJvp(CubeSetupContext):
    """jvp misses the factor 3."""

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * x**2


class MulAdd(Function):
    """(x * y, x + 2y): two inputs, two outputs, jvp and backward right."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x * y, x + 2 * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y = inputs
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)

    @staticmethod
    def backward(ctx, grad_prod, grad_sum):
        x, y = ctx.saved_tensors
        return grad_prod * y + grad_sum, grad_prod * x + 2 * grad_sum

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        return tx * y + x * ty, tx + 2 * ty


class MulAddWrongJvp(MulAdd):
    """The second output's tangent forgets the factor 2 on y: block out1 / y is wrong in forward mode."""

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        return tx * y + x * ty, tx + ty


class NumpyJvp(SinJvp):
    """A right jvp computed in NumPy: right column by column, but the prototype vmap of
    check_batched_forward_grad cannot pass a batched tangent through NumPy."""

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        cos = np.cos(x.detach().cpu().numpy())
        return torch.from_numpy(cos * tangent.detach().cpu().numpy()).to(tangent.device)


def _define_sin_no_forward():
    """The custom op: a right backward (register_autograd) and no forward-mode formula.

    The corpus tests run this file again in the same process, while test modules hold the op
    their import defined; defining it again would make PyTorch free the dispatcher entry they
    hold (tests/real_world/test_corpus_ops.py). A second run takes the op the first one defined."""
    from torch._library.custom_ops import OPDEFS

    if "gvtest_fwd::sin_no_forward" in OPDEFS:
        return OPDEFS["gvtest_fwd::sin_no_forward"]

    @torch.library.custom_op("gvtest_fwd::sin_no_forward", mutates_args=())
    def sin_no_forward(x: torch.Tensor) -> torch.Tensor:
        """A custom op with a right backward (register_autograd) and no forward-mode formula."""
        return torch.from_numpy(np.sin(x.detach().cpu().numpy())).to(x.device)

    @sin_no_forward.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    sin_no_forward.register_autograd(backward, setup_context=setup_context)
    return sin_no_forward


sin_no_forward = _define_sin_no_forward()


def example_inputs(device="cpu", dtype=torch.float64):
    """One 2x3 tensor (a few seconds of forward-mode columns at most)."""
    return (torch.rand(2, 3, device=device, dtype=dtype, requires_grad=True),)


def two_inputs(device="cpu", dtype=torch.float64):
    return (
        torch.rand(2, 3, device=device, dtype=dtype, requires_grad=True),
        torch.rand(2, 3, device=device, dtype=dtype, requires_grad=True),
    )
