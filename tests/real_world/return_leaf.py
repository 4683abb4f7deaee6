"""Identity: returns its first input as-is next to a sum, ``(a, a + b)``.

Source: pytorch/pytorch, test/test_autograd.py (``test_return_leaf``). Pattern: one output is an
input (a leaf) returned unchanged, the other a new tensor; backward combines both output
gradients.
Correct.
"""

import torch


class Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a, a + b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return grad_a + grad_b, grad_b


def example_inputs(device, dtype):
    return (
        torch.randn(3, device=device, dtype=dtype, requires_grad=True),
        torch.randn(3, device=device, dtype=dtype, requires_grad=True),
    )
