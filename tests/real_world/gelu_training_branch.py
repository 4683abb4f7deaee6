"""GELU whose training forward is the tanh approximation while backward is the exact GELU's.

Source: gradviz's own red-team testing (this project), after the approximate/exact mismatch of
harvard-edge/cs249r_book PR #1399. Pattern: ``needs_input_grad`` chooses the forward; the two
GELUs differ by about 1e-4, which gradcheck's tolerance catches.
"""

import math

import torch
import torch.nn.functional as F

BUG = "training forward uses GELU's tanh approximation; backward is the exact GELU's derivative."


class Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if ctx.needs_input_grad[0]:
            return F.gelu(x, approximate="tanh")
        return F.gelu(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
        pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return g * (cdf + x * pdf)


def example_inputs(device, dtype):
    return ((torch.randn(32, device=device, dtype=dtype) * 2).requires_grad_(),)
