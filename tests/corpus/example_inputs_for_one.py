"""Two Functions and one module-level example_inputs, written for the second (three tensors): the
first (one argument) is checked on random inputs, with a note, not handed three arguments.

Expected: exit 0, message "example_inputs() returns 3 arguments, for Product3".
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class Product3(Function):
    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y, z)
        return x * y * z

    @staticmethod
    def backward(ctx, grad):
        x, y, z = ctx.saved_tensors
        return grad * y * z, grad * x * z, grad * x * y


def example_inputs(device, dtype):
    return tuple(torch.randn(3, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
