"""example_inputs asks for a 10^6 x 10^6 input (8 TB in float64).

Expected: exit 2, kind example_inputs, message "ran out of memory", line 23.
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
    return (torch.randn(10**6, 10**6, device=device, dtype=dtype, requires_grad=True),)  # <- expected line
