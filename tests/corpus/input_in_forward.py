"""forward waits for keyboard input: there is none, so it must fail, not hang.

Expected: exit 2, kind forward, message "EOFError", line 14.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        scale = float(input("scale? "))  # <- expected line
        return scale * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
