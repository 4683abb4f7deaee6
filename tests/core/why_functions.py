"""Functions for the "why does it fail" tests: right and wrong backwards, written as users write them.

Each buggy one carries its slip in the backward only; the hints and the sweep must find it from
the Jacobians and the forward, never from a name.
"""

import torch
from torch.autograd import Function

from gradviz.core.inputs import prepare_inputs


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


class TanhOneMinusY(Function):
    """Buggy: 1 - y instead of 1 - y²."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y)


class SoftmaxDiagonal(Function):
    """Buggy: only the diagonal of softmax's Jacobian, diag(y) - y yᵀ."""

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)


class CubeNoGradOutput(Function):
    """Buggy: returns 3x² without multiplying by grad_output."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2


class MulSwapped(Function):
    """Buggy: u * v whose backward returns v's gradient for u and u's for v."""

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u * v

    @staticmethod
    def backward(ctx, g):
        u, v = ctx.saved_tensors
        return g * u, g * v


class ScaleTransposedReshape(Function):
    """Buggy: x * w for a 2x3 x, whose gradient is computed transposed and reshaped back."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return (g * w).t().reshape(x.shape), g * x


class MatMulGradTransposed(Function):
    """Buggy: a @ b whose gradient for a (square) comes back transposed."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g @ b.t()).t(), a.t() @ g


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.t(), a.t() @ g


class Abs(Function):
    """Right everywhere but at 0, where it returns +1 (the derivative does not exist there)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (2 * (x >= 0).to(g.dtype) - 1)


def random_inputs(*shapes, dtype=torch.float64, seed=0, fixed=()):
    """Fresh leaves (positions in ``fixed`` without requires_grad), as gradviz prepares them."""
    generator = torch.Generator().manual_seed(seed)
    raw = tuple(
        torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype).requires_grad_(k not in fixed)
        for k, shape in enumerate(shapes)
    )
    return prepare_inputs(raw, torch.device("cpu"), dtype, [f"in{k}" for k in range(len(raw))])


def abs_inputs(dtype=torch.float64):
    """Six values, every other one exactly 0: |x| has a kink at half of them."""
    x = torch.randn(6, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(dtype)
    x[::2] = 0
    return prepare_inputs((x.requires_grad_(),), torch.device("cpu"), dtype, ["x"])
