"""MishAutoFn: Mish ``x * tanh(softplus(x))`` with a hand-written backward.

Source: huggingface/pytorch-image-models, timm/layers/activations_me.py (``MishAutoFn``,
"experimental memory-efficient variant"). Pattern: custom activation; backward
``grad * (t + x * sigmoid(x) * (1 - t**2))`` with ``t = tanh(softplus(x))``.
Correct.
"""

import torch
import torch.nn.functional as F


class MishAutoFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.mul(torch.tanh(F.softplus(x)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        t = F.softplus(x).tanh()
        return grad_output.mul(t + x * torch.sigmoid(x) * (1 - t * t))


def example_inputs(device, dtype):
    return (torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True),)
