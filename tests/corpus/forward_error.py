"""An exception in forward: a shape mismatch.

Expected: exit 2, kind forward, message "Square.forward raised RuntimeError", line 14.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x @ torch.ones(7, dtype=x.dtype)  # <- expected line

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
