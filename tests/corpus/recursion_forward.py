"""Endless recursion in forward: a RecursionError, reported like any other exception.

Expected: exit 2, kind forward, message "RecursionError", line 11.
"""

import torch
from torch.autograd import Function


def power_tower(x, n):
    return power_tower(x, n + 1) * x  # <- expected line


class Tower(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return power_tower(x, 0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
