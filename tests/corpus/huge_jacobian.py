"""A 10^6-element input: each Jacobian would be 10^6 x 10^6 (8 TB), never allocated.

Expected: exit 0, message "wrong cells searched by bisection".
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
    return (torch.randn(10**6, device=device, dtype=dtype, requires_grad=True),)
