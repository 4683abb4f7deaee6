"""A config argument that is a collections.defaultdict.

Source: gradviz's own red-team testing (this project). Pattern: a non-tensor container argument
that must reach forward as it is (rebuilt as a plain dict, the missing key would raise).
"""

import collections

import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cfg):
        ctx.k = cfg["scale"]  # the default factory supplies it
        return x * ctx.k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True), collections.defaultdict(lambda: 1.5))
