"""Buggy twin of the lecture's |u·v|: the gradient for u lost its sign(u).

d|uv|/du is sign(u)·|v|; this backward returns |v| alone, so wherever u is negative the
analytic derivative has the wrong sign. The error map fails exactly on the diagonal cells of
the u block whose u is negative, and the v block passes: a picture of a missing sign.
"""

import torch
from torch.autograd import Function

CATEGORY = "Buggy twins"
BUG = "d|uv|/du is returned as grad·|v|: the factor sign(u) is missing."


class Something(Function):
    """Buggy: the u gradient misses input1.sign()."""

    @staticmethod
    def forward(ctx, input1, input2):
        ctx.save_for_backward(input1, input2)
        return (input1 * input2).abs()

    @staticmethod
    def backward(ctx, grad_output):
        input1, input2 = ctx.saved_tensors
        # BUG: should be grad_output * input1.sign() * input2.abs()
        return grad_output * input2.abs(), grad_output * input1.abs() * input2.sign()


def example_inputs(device, dtype):
    u = torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True)
    return u, v
