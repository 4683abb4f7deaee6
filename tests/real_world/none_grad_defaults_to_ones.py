"""Tanh with ``set_materialize_grads(False)`` that treats a missing gradient as ones.

Source: a realistic slip against PyTorch's rule for undefined output gradients
(tools/autograd/derivatives.yaml, "Notes about undefined output gradients"; gradcheck's
``check_undefined_grad``): an undefined grad_output means zero, but this backward substitutes
``ones_like`` ("as if .backward() were called on it"). Pattern: ``set_materialize_grads(False)``
with a single output, so every Jacobian row is right and only the undefined-gradient check sees
the slip.
Buggy: with an undefined output gradient, backward returns a non-zero input gradient.
"""

import torch

BUG = "an undefined (None) output gradient is replaced by ones instead of zeros, so backward returns 1 - tanh(x)**2."


class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        if grad_output is None:
            grad_output = torch.ones_like(y)
        return grad_output * (1 - y * y)


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),)
