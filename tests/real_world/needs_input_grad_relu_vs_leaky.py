"""A forward that takes another branch when autograd needs its input's gradient.

Source: gradviz's own red-team testing (this project). Pattern: ``ctx.needs_input_grad`` read
in forward (a fast inference path, common in hand-written layers). gradcheck calls forward with
inputs that require grad, so it checks the training branch: a plain ReLU whose backward is the
leaky one. 40 inputs, so gradviz's batched (vmap) path would run unless it sees the difference.
"""

import torch

BUG = "forward's training branch is ReLU but backward differentiates the leaky ReLU of the inference branch."


class Leaky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if ctx.needs_input_grad[0]:
            return torch.relu(x)
        return torch.where(x > 0, x, 0.01 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x > 0, 1.0, 0.01).to(g.dtype)


def example_inputs(device, dtype):
    x = torch.linspace(-2.05, 1.95, 40, device=device, dtype=dtype)
    return (x.requires_grad_(),)
