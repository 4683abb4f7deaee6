"""forward modifies its input in place without ctx.mark_dirty.

Expected: exit 0, message "without ctx.mark_dirty(x)".
"""

import torch
from torch.autograd import Function


class Double(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
