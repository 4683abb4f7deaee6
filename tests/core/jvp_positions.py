"""Forward-mode Functions with non-tensor arguments before, between and after their tensors.

The pattern of pytorch/pytorch#71118: ``forward(ctx, n, x)`` with ``jvp(ctx, _, x_t)`` (the
non-tensor's tangent is None) and no backward. The right jvps return an input tangent as it is
(``x_t``), which is what a copy or a selection does: the output's tangent is then the very
tensor the input's tangent is. The wrong ones scale it where they should not.
"""

from __future__ import annotations

import torch
from torch.autograd import Function


class NonTensorFirst(Function):
    """y = x.clone(); the leading int is ignored (pytorch#71118)."""

    @staticmethod
    def forward(ctx, n, x):
        return x.clone()

    @staticmethod
    def jvp(ctx, _, x_t):
        return x_t


class NonTensorBetween(Function):
    """(x.clone(), s·y): the scale s sits between the tensors."""

    @staticmethod
    def forward(ctx, x, s, y):
        ctx.s = s
        return x.clone(), y * s

    @staticmethod
    def jvp(ctx, x_t, _, y_t):
        return x_t, y_t * ctx.s


class NonTensorLast(Function):
    """y = x.clone() and x[:n]·2: the count n comes after the tensor."""

    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        return x.clone(), x[:n] * 2

    @staticmethod
    def jvp(ctx, x_t, _):
        return x_t, x_t[: ctx.n] * 2


class NonTensorFirstWrongJvp(Function):
    """y = x.clone(), with a jvp that doubles the tangent: wrong."""

    @staticmethod
    def forward(ctx, n, x):
        return x.clone()

    @staticmethod
    def jvp(ctx, _, x_t):
        return x_t * 2


class NonTensorBetweenWrongJvp(Function):
    """(x.clone(), s·y), with a jvp that forgets s on y's tangent: wrong in block (1, y) only."""

    @staticmethod
    def forward(ctx, x, s, y):
        return x.clone(), y * s

    @staticmethod
    def jvp(ctx, x_t, _, y_t):
        return x_t, y_t


def _tensor(n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float64, requires_grad=True)


def arguments(fn: type[Function]) -> tuple:
    """Fresh arguments for each Function, its non-tensors where its forward has them."""
    if fn in (NonTensorFirst, NonTensorFirstWrongJvp):
        return (3, _tensor(4))
    if fn in (NonTensorBetween, NonTensorBetweenWrongJvp):
        return (_tensor(3), 2.5, _tensor(4))
    return (_tensor(5), 2)
