"""forward returns a tuple with a tensor and a string; backward takes one gradient only.

Expected: exit 2, kind backward, message "takes 2 positional arguments but 3 were given", line 17.
"""

import torch
from torch.autograd import Function


class Labelled(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x, "squared"

    @staticmethod
    def backward(ctx, g):  # <- expected line
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
