"""GELU whose forward and backward use different approximations.

Source: harvard-edge/cs249r_book, pull request #1399 ("fix: GELU gradient mismatch"): TinyTorch's
GELU computed ``x * sigmoid(1.702 x)`` going forward but the derivative of the tanh
approximation going back ("up to 22% divergence"); here re-expressed as a
``torch.autograd.Function``. Pattern: hand-written activation, backward formula for the wrong
function.
Buggy: the analytic diagonal is d/dx of tanh-GELU, the numerical one d/dx of sigmoid-GELU.
"""

import math

import torch

BUG = "forward uses the sigmoid approximation x * sigmoid(1.702 x), backward differentiates the tanh approximation."

C = math.sqrt(2.0 / math.pi)


class GELU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(1.702 * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        inner = C * (x + 0.044715 * x**3)
        t = torch.tanh(inner)
        slope = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + 3 * 0.044715 * x**2)
        return grad_output * slope


def example_inputs(device, dtype):
    return (torch.linspace(-2.5, 2.5, 6, device=device, dtype=dtype).requires_grad_(True),)
