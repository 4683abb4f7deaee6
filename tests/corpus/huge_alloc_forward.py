"""forward allocates torch.empty(10**13): 40 TB of float32.

Expected: exit 2, kind forward, message "ran out of memory", line 14.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        workspace = torch.empty(10**13)  # <- expected line
        return x * x + workspace[:1].zero_()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
