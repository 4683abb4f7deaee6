"""F1: returns its input plus a random tensor marked non-differentiable.

Source: pytorch/pytorch, test/test_autograd.py (``test_dep_nograd``). Pattern: the first output
is the input object itself; the second is fresh noise (a different draw on every call) marked
non-differentiable, so only the first is checked.
Correct.
"""

import torch


class F1(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        noise = torch.randn(input.size(), dtype=input.dtype, device=input.device)
        ctx.mark_non_differentiable(noise)
        return input, noise

    @staticmethod
    def backward(ctx, grad_output, ignored):
        return grad_output


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
