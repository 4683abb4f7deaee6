"""MulConstant: y = c·x for a Python number c, the notes' example of a non-tensor argument.

The constant is stashed on ctx (it is not a tensor, so save_for_backward is not for it), and
backward returns grad_output·c for the tensor and None for the constant: gradients of
non-tensor arguments must be None. The Jacobian is c times the identity.
"""

import torch
from torch.autograd import Function

CATEGORY = "Seed examples"


class MulConstant(Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        # ctx stashes information for the backward computation
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        # one gradient per forward argument; the non-tensor constant gets None
        return grad_output * ctx.constant, None


def example_inputs(device, dtype):
    return torch.randn(4, 5, device=device, dtype=dtype, requires_grad=True), 2.5
