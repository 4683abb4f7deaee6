"""MyFunction(tensor1, pyscalar, tensor2): a Python number between two tensors.

Source: pytorch/pytorch, test/test_autograd.py (``test_function``). Pattern: a non-tensor
argument in the middle of apply's arguments (backward returns None in its slot), two
differentiable inputs, saved tensors plus a plain ctx attribute.
Correct.
"""

import torch


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor1, pyscalar, tensor2):
        ctx.pyscalar = pyscalar
        ctx.save_for_backward(tensor1, tensor2)
        return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

    @staticmethod
    def backward(ctx, grad_output):
        t1, t2 = ctx.saved_tensors
        return grad_output + grad_output * t2, None, grad_output * ctx.pyscalar + grad_output * t1


def example_inputs(device, dtype):
    return (
        torch.randn(3, 3, device=device, dtype=dtype, requires_grad=True),
        2,
        torch.randn(3, 3, device=device, dtype=dtype, requires_grad=True),
    )
