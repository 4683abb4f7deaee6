"""An exception in example_inputs: a negative size.

Expected: exit 2, kind example_inputs, message "example_inputs(device, dtype) raised RuntimeError", line 23.
"""

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
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(-3, device=device, dtype=dtype, requires_grad=True),)  # <- expected line
