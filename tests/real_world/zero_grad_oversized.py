"""ZeroGradientsGenVmap: backward returns an over-sized zero gradient that autograd sums away.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py
(``ZeroGradientsGenVmap``). Pattern: two inputs and two outputs (clones); backward returns
``torch.zeros(3, 4, *gx.shape)`` for x (autograd reduces a gradient whose shape the input
broadcasts to) and zeros for y.
Buggy for gradcheck (by design): the analytic Jacobians are zero, the numerical ones identities.
"""

import torch

BUG = "backward returns zero gradients (one of them over-sized and summed down by autograd) for an identity forward."


class ZeroGradientsGenVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x.clone(), y.clone()

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        pass

    @staticmethod
    def backward(ctx, gx, gy):
        return (
            torch.zeros(3, 4, *gx.shape, dtype=gx.dtype, device=gx.device),
            torch.zeros(gy.shape, dtype=gy.dtype, device=gy.device),
        )


def example_inputs(device, dtype):
    return (
        torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),
        torch.randn(3, device=device, dtype=dtype, requires_grad=True),
    )
