"""Buggy twin: x² whose backward forgot the factor 2.

The derivative of x² is 2x; this backward returns grad·x. Every diagonal cell of the Jacobian
is off by the same factor, so the analytic matrix looks right in shape and pattern but is
exactly half the numerical one: the hint names the factor.
"""

import torch
from torch.autograd import Function

CATEGORY = "Buggy twins"
BUG = "d(x²)/dx is returned as x instead of 2x: a factor of 2 is missing."


class Square(Function):
    """Buggy: returns grad_output * x instead of 2 * x * grad_output."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x  # BUG: should be 2 * x * grad_output


def example_inputs(device, dtype):
    return (torch.randn(5, device=device, dtype=dtype, requires_grad=True),)
