"""MulConstant with set_materialize_grads(False): the notes' optimised variant.

With materialisation off, autograd does not build a zero tensor for an output nobody uses:
backward may receive None and must treat it as zeros, here by returning None at once. The
Jacobian is the same c times the identity as the plain MulConstant; the graph panel flags
the node as not materialising its gradients.
"""

import torch
from torch.autograd import Function

CATEGORY = "Seed examples"


class MulConstant(Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.set_materialize_grads(False)
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        # grad_output may be None now: skip the work and return None
        if grad_output is None:
            return None, None

        # gradients of non-tensor arguments to forward must be None
        return grad_output * ctx.constant, None


def example_inputs(device, dtype):
    return torch.randn(4, 5, device=device, dtype=dtype, requires_grad=True), 2.5
