"""os._exit(0) in forward: the process ends with code 0, which must never read as a pass.

Expected: exit 2, kind crashed, message "the Function's code ended the process", line 16.
"""

import os

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        os._exit(0)  # <- expected line
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
