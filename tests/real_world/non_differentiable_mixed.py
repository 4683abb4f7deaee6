"""MyFunction: two float outputs, the first marked non-differentiable.

Source: pytorch/pytorch, test/test_autograd.py (``test_mark_non_differentiable_mixed``).
Pattern: ``ctx.mark_non_differentiable`` on a floating-point output; backward receives a zero
gradient for it and only uses the other output's.
Correct.
"""

import torch


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        a = input + 1
        b = input + 2
        ctx.mark_non_differentiable(a)
        return a, b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return grad_b


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),)
