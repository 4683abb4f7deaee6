"""backward returns a gradient of the wrong shape (summed to a scalar).

Expected: exit 2, kind gradient_shape, message "the gradient for x (its 1st input) in the wrong shape", line 19.
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
        return (2 * x * g).sum()  # <- expected line


def example_inputs(device, dtype):
    return (torch.randn(3, 2, device=device, dtype=dtype, requires_grad=True),)
