"""forward divides by zero: its outputs hold Inf and NaN.

Expected: exit 1, message "NaN or Inf".
"""

import torch
from torch.autograd import Function


class Reciprocal(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 1 / x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g / (x * x)


def example_inputs(device, dtype):
    x = torch.randn(3, device=device, dtype=dtype)
    x[1] = 0.0
    return (x.requires_grad_(),)
