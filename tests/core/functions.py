"""Functions for core tests, each exercising a different corner of autograd.Function."""

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class Exp(Function):
    """Saves its output, not its input."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class SinCos(Function):
    """Two outputs from two inputs, one a Python scale factor in between."""

    @staticmethod
    def forward(ctx, x, scale, y):
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        return (x * y).sin() * scale, (x + y.sum()).cos()

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        s = ctx.scale
        c = (x * y).cos() * s
        d = -(x + y.sum()).sin()
        return g1 * c * y + g2 * d, None, g1 * c * x + (g2 * d).sum()


class ItemScale(Function):
    """A backward that calls .item() on a gradient: correct, but it cannot run under vmap."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sum()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sum() + (g * x).sum().item()


class InPlaceDouble(Function):
    """Modifies its input and says so with mark_dirty."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


class Scalar(Function):
    """0-d output from a 3-d input."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x**3).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x**2


class SortWithIndex(Function):
    """A differentiable output plus an integer one (non-differentiable by type)."""

    @staticmethod
    def forward(ctx, x):
        values, index = x.sort(dim=-1)
        ctx.save_for_backward(index)
        ctx.mark_non_differentiable(index)
        return values, index

    @staticmethod
    def backward(ctx, g, _g_index):
        (index,) = ctx.saved_tensors
        return torch.zeros_like(g).scatter(-1, index, g)


CORRECT = [Exp, SinCos, ItemScale, InPlaceDouble, Scalar, SortWithIndex]


def inputs_for(fn, dtype=torch.float64):
    g = torch.Generator().manual_seed(7)

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=dtype).mul(2).sub(1).requires_grad_()

    return {
        Exp: lambda: (rand(3, 4),),
        SinCos: lambda: (rand(5), 1.5, rand(5)),
        ItemScale: lambda: (rand(2, 3),),
        InPlaceDouble: lambda: (rand(4),),
        Scalar: lambda: (rand(2, 3, 2),),
        SortWithIndex: lambda: (rand(3, 5),),
    }[fn]()
