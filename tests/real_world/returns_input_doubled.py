"""MyFunction: forward returns its input unchanged, backward doubles the gradient.

Source: pytorch/pytorch, test/test_autograd.py (``test_function_returns_input``, which checks
that autograd routes ``grad * 2`` correctly when forward returns the input object itself,
for shapes (1,) and ()). Pattern: forward ``return x`` (no clone, no view); a 0-d input.
Buggy for gradcheck (by design): the analytic derivative is 2, the numerical one 1.
"""

import torch

BUG = "forward is the identity but backward returns grad * 2."


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def example_inputs(device, dtype):
    return (torch.tensor(0.75, device=device, dtype=dtype, requires_grad=True),)
