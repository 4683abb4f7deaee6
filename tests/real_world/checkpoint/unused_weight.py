"""A Function that takes a weight it never uses: the weight's blocks are zero on both sides.

Source: written for gradviz (this project). A block that is all zero in both Jacobians passes
while checking nothing; gradviz must say so rather than print a bare pass.
"""

import torch


class UnusedWeight(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return 2 * g, None


def example_inputs(device, dtype):
    x = torch.randn(3, device=device, dtype=dtype, requires_grad=True)
    w = torch.randn(2, device=device, dtype=dtype, requires_grad=True)
    return x, w
