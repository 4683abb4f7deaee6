"""LowerBoundFunction: ``max(x, bound)`` whose gradient also flows when it pushes x up.

Source: InterDigitalInc/CompressAI, compressai/ops/bound_ops.py (``LowerBoundFunction``, used
by GDN and the entropy models). Pattern: a second tensor argument that does not require grad
(the bound, a 1-element buffer); backward ``((x >= bound) | (grad_output < 0)) * grad_output``
depends on the sign of grad_output, so it is not linear in grad_output.
Correct as far as gradcheck can tell: with one-hot (non-negative) grad_outputs it is the true
derivative away from the bound, and zero grad_outputs give zero.
"""

import torch


class LowerBoundFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bound):
        ctx.save_for_backward(x, bound)
        return torch.max(x, bound)

    @staticmethod
    def backward(ctx, grad_output):
        x, bound = ctx.saved_tensors
        pass_through = (x >= bound) | (grad_output < 0)
        return pass_through.to(grad_output.dtype) * grad_output, None


def example_inputs(device, dtype):
    x = torch.tensor([[0.4, -0.9, 1.3, 0.05], [-0.2, 0.7, -1.5, 0.35]], device=device, dtype=dtype)
    bound = torch.tensor([0.1], device=device, dtype=dtype)
    return (x.requires_grad_(True), bound)
