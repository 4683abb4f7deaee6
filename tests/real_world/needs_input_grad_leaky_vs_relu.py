"""The mirror case: the training branch is right, only the inference branch differs.

Source: gradviz's own red-team testing (this project). Pattern: ``ctx.needs_input_grad`` in
forward. gradcheck sees the training branch (leaky ReLU, matching backward) and passes; a
checker that runs forward without grad would see the other branch and wrongly fail it.
"""

import torch


class Leaky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if ctx.needs_input_grad[0]:
            return torch.where(x > 0, x, 0.01 * x)
        return torch.relu(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x > 0, 1.0, 0.01).to(g.dtype)


def example_inputs(device, dtype):
    x = torch.linspace(-2.05, 1.95, 40, device=device, dtype=dtype)
    return (x.requires_grad_(),)
