"""forward adds fresh noise on every call: finite differences are noise.

Expected: exit 1, message "forward is not deterministic".
"""

import torch
from torch.autograd import Function


class NoisySquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x + 1e-4 * torch.rand_like(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
