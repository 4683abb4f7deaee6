"""MyFunction: forward doubles, backward returns None (an undefined gradient).

Source: pytorch/pytorch, test/test_autograd.py (``test_function_returns_undefined_tensor``,
which checks that None from backward propagates as an undefined gradient). Pattern: backward
returns None for a differentiable input.
Buggy for gradcheck: the analytic Jacobian is zero, the numerical one 2 on the diagonal.
"""

import torch

BUG = "backward returns None for an input the output depends on (derivative 2)."


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return None


def example_inputs(device, dtype):
    return (torch.randn(4, device=device, dtype=dtype, requires_grad=True),)
