"""My Function: say in one paragraph what it computes and what its backward returns."""

import torch
from torch.autograd import Function


class MyFunction(Function):
    @staticmethod
    def forward(ctx, x, y):
        # save what backward needs; non-tensors go on ctx directly (ctx.alpha = ...)
        ctx.save_for_backward(x, y)
        return x * y.sin()

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        # one gradient per forward argument (None for non-tensors or inputs without grad)
        return grad_output * y.sin(), grad_output * x * y.cos()


def example_inputs(device, dtype):
    """The arguments of MyFunction.apply; tensors with requires_grad=True get checked."""
    x = torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True)
    y = torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True)
    return x, y
