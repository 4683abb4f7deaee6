"""A segmentation fault in backward (reading address 0 through ctypes).

Expected: exit 2, kind crashed, message "SIGSEGV", line 22.
"""

import ctypes

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
        # a C extension with a bad pointer does this
        ctypes.string_at(0)  # <- expected line
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
