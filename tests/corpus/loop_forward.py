"""An endless loop in forward.

Expected: exit 2, kind timeout, message "did not finish within 3 s", line 15.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y = x.clone()
        while (y - x).abs().max() < 1: y = y * 1.0  # <- expected line (one line: the stack lands here)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
