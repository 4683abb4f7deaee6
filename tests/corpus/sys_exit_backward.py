"""sys.exit(0) in backward.

Expected: exit 2, kind backward, message "the Function's code ended the process", line 22.
"""

import sys

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if g.abs().sum() >= 0:
            sys.exit(0)  # <- expected line
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
