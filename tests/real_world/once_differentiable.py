"""MyFunction with ``@once_differentiable`` backward (a float argument between two tensors).

Source: pytorch/pytorch, test/test_autograd.py (``test_once_differentiable``). Pattern:
backward runs with grad mode off and cannot be differentiated again; a non-tensor argument.
The formula is changed to ``t1 * exp(t2) + s * t2`` so that this file is not a twin of
pyscalar_middle_arg.
Correct (a first-order check must pass; double backward is declared unsupported).
"""

import torch
from torch.autograd.function import once_differentiable


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor1, pyscalar, tensor2):
        ctx.pyscalar = pyscalar
        ctx.save_for_backward(tensor1, tensor2)
        return tensor1 * tensor2.exp() + pyscalar * tensor2

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        t1, t2 = ctx.saved_tensors
        e = t2.exp()
        return grad_output * e, None, grad_output * (t1 * e + ctx.pyscalar)


def example_inputs(device, dtype):
    return (
        torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),
        0.5,
        torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),
    )
