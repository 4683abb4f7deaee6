"""Functions the API tests check: importable (tests.api.functions), so the reproducer and the window
reach them by import. ``WrongSign`` is the buggy |u·v| of the README screenshot, in miniature."""

import random

import numpy as np
import torch


class Product(torch.autograd.Function):
    """u * v, correct."""

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u * v

    @staticmethod
    def backward(ctx, grad):
        u, v = ctx.saved_tensors
        return grad * v, grad * u


class WrongSign(torch.autograd.Function):
    """|u * v| whose backward forgets the sign: every cell where u * v < 0 fails."""

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return (u * v).abs()

    @staticmethod
    def backward(ctx, grad):
        u, v = ctx.saved_tensors
        return grad * v.abs(), grad * u.abs()


class NotScaledByGrad(torch.autograd.Function):
    """A Jacobian within tolerance, but a gradient that does not vanish with grad_output: only
    gradcheck's multiplied-by-grad_output check fails."""

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, grad):
        return grad * 3.0 + 1e-8


class Noisy(torch.autograd.Function):
    """Draws from torch's, Python's and NumPy's global generators in forward and backward."""

    @staticmethod
    def forward(ctx, x):
        random.random()
        np.random.rand()
        return x * 2 + 0 * torch.rand_like(x)

    @staticmethod
    def backward(ctx, grad):
        torch.rand(3)
        return grad * 2


class Exploding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        raise RuntimeError("forward exploded")

    @staticmethod
    def backward(ctx, grad):
        return grad


def scaled_product(u, v):
    """A callable built on a Function."""
    return Product.apply(u, v) * 2.0


def inputs(seed: int = 0, shape=(4, 3), dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(shape, generator=generator, dtype=dtype).requires_grad_()
    v = torch.randn(shape, generator=generator, dtype=dtype).requires_grad_()
    return u, v
