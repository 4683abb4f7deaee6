"""A backward that computes its local derivative once and keeps it on ctx for later calls.

Source: gradviz's own red-team testing (this project). Pattern: state cached on ``ctx`` inside
backward. Correct: every call multiplies by the same cached derivative. A checker that calls
backward batched (vmap) first would cache a batched tensor there and break the plain calls.
"""

import torch


class Sq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.deriv = None
        return x * x

    @staticmethod
    def backward(ctx, g):
        if ctx.deriv is None:
            (x,) = ctx.saved_tensors
            ctx.deriv = (2 * x).to(g.dtype) + torch.zeros_like(g)
        return g * ctx.deriv


def example_inputs(device, dtype):
    return (torch.randn(24, device=device, dtype=dtype, requires_grad=True),)
