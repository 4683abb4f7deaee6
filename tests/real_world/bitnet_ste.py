"""STEFunc: sign of a clamp forward, identity backward that returns grad_output itself.

Source: kyegomez/BitNet, bitnet/straight_through_estimator.py (``STEFunc``). Pattern: the plain
straight-through estimator: forward ``sign(clamp(x, -1, 1))``, backward ``return grad_output``
(hands autograd back the very tensor it was given).
Buggy for gradcheck (by design): analytic identity, numerical zero.
"""

import torch

BUG = "straight-through estimator: forward is piecewise constant, backward returns grad_output unchanged."


class STEFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        return torch.sign(torch.clamp(input, min=-1.0, max=1.0))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def example_inputs(device, dtype):
    x = torch.tensor([[0.4, -1.2, 2.0], [-0.5, 0.9, -0.1]], device=device, dtype=dtype)
    return (x.requires_grad_(True),)
