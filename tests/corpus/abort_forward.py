"""os.abort() in forward: the process dies of SIGABRT, as after a failed C assertion.

Expected: exit 2, kind crashed, message "SIGABRT", line 16.
"""

import os

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        os.abort()  # <- expected line
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
