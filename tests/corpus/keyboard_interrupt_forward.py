"""forward raises KeyboardInterrupt itself: an error, and the worker lives on.

Expected: exit 2, kind forward, message "KeyboardInterrupt", line 14.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        raise KeyboardInterrupt  # <- expected line

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
