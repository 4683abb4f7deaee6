"""The same tensor passed twice, Mul.apply(x, x), with the two gradients swapped.

Source: gradviz's own red-team testing (this project). Pattern: one tensor as two arguments.
gradcheck perturbs x (both arguments at once) and compares the total derivative, the sum of
the two gradients, which the swap does not change: it passes, and gradviz must agree.
"""

import torch


class MulSq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * 2 * a * b, g * b * b  # swapped: harmless only while a is b


def example_inputs(device, dtype):
    x = torch.randn(3, device=device, dtype=dtype, requires_grad=True)
    return (x, x)
