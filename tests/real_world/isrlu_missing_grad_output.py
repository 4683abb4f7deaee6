"""ISRLU: backward returns the local derivative without multiplying by grad_out.

Source: pytorch/pytorch issue #4355 ("gradcheck fails with cryptic error"): an inverse square
root linear unit ``x / sqrt(1 + alpha x**2)`` for x < 0, whose backward is
``return ctx.nisr ** 3, None``. Pattern: a backward not multiplied by grad_output; a
defaulted non-tensor ``alpha``; a tensor kept as a plain ctx attribute.
Buggy: every Jacobian row is the whole derivative vector, not one entry of it.
"""

import torch

BUG = "backward returns nisr ** 3 (the local derivative) without multiplying by grad_out."


class ISRLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, alpha=1):
        negatives = torch.min(tensor, 0 * tensor)
        ctx.nisr = torch.rsqrt(1.0 + alpha * negatives**2)
        return tensor * ctx.nisr

    @staticmethod
    def backward(ctx, grad_out):
        return ctx.nisr**3, None


def example_inputs(device, dtype):
    x = torch.tensor([[-1.2, 0.7, -0.4], [1.5, -2.0, 0.3]], device=device, dtype=dtype)
    return (x.requires_grad_(True),)
