"""Buggy twin: SiLU, x·σ(x), whose backward forgot one term of the product rule.

d/dx [x·σ(x)] = σ(x) + x·σ(x)·(1 − σ(x)). This backward keeps only σ(x), the derivative as if
x were a constant factor. The error is largest where |x| is around 1-2 and vanishes at x = 0,
so the failing diagonal cells light up unevenly: a forgotten term, not a constant factor.
"""

import torch
from torch.autograd import Function

CATEGORY = "Buggy twins"
BUG = "Only σ(x) is returned; the product-rule term x·σ(x)·(1−σ(x)) is forgotten."


class SiLU(Function):
    """Buggy: backward drops x * s * (1 - s)."""

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s  # BUG: should be grad_output * (s + x * s * (1 - s))


def example_inputs(device, dtype):
    return (torch.randn(4, 6, device=device, dtype=dtype, requires_grad=True),)
