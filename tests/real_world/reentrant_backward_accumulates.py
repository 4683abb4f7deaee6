"""Reenter: backward runs a nested backward and reads ``.grad``, which accumulates.

Source: pytorch/pytorch, test/test_autograd.py (``test_simple_reentrant``: forward builds a small
graph under ``enable_grad`` on a detached copy, backward calls ``.backward()`` on it and returns
``ctx.x.grad * grad_output``). Re-implemented with ``retain_graph=True`` so that backward can run
more than once, which is what a gradient check does. Pattern: re-entrant backward; a second,
non-differentiable tensor argument.
Buggy: ``ctx.x.grad`` is never reset, so every backward adds to the previous one (each Jacobian
row comes out larger than the last, and two passes differ).
"""

import torch

BUG = "backward returns ctx.x.grad, which a nested .backward() accumulates into on every call."


class Reenter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        with torch.enable_grad():
            ctx.x = x.detach().requires_grad_(True)
            ctx.output = ctx.x * y * y
        return ctx.output.detach()

    @staticmethod
    def backward(ctx, grad_output):
        with torch.enable_grad():
            ctx.output.sum().backward(retain_graph=True)
        return ctx.x.grad * grad_output, None


def example_inputs(device, dtype):
    return (
        torch.randn(2, 2, device=device, dtype=dtype, requires_grad=True),
        torch.randn(2, 2, device=device, dtype=dtype),
    )
