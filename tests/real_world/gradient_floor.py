"""Tanh whose backward adds a tiny constant so saturated units keep a gradient.

Source: a realistic slip (the "never let the gradient vanish" trick applied to the wrong term):
``grad_output * (1 - y**2) + 1e-7``. Pattern: a backward not multiplied by grad_output by an
amount far below the Jacobian tolerance (atol 1e-5), so only gradcheck's
"backward not multiplied by grad_output" (zero grad_output) check catches it.
Buggy: a zero grad_output gives a gradient of 1e-7 everywhere.
"""

import torch

BUG = "backward adds 1e-7 that is not multiplied by grad_output: zero output gradients give non-zero input gradients."


class FlooredTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (1 - y * y) + 1e-7


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),)
