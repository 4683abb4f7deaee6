"""Func: ``set_materialize_grads(False)`` with a backward that checks each gradient for None.

Source: pytorch/pytorch, torch/autograd/function.py (the example in the docstring of
``FunctionCtx.set_materialize_grads``). Pattern: two outputs, undefined output gradients arrive
as None and are skipped; ``@once_differentiable``; a 0-d input.
Correct.
"""

import torch
from torch.autograd.function import once_differentiable


class Func(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x.clone(), x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        grad_input = torch.zeros_like(x)
        if g1 is not None:
            grad_input += g1
        if g2 is not None:
            grad_input += g2
        return grad_input


def example_inputs(device, dtype):
    return (torch.tensor(1.5, device=device, dtype=dtype, requires_grad=True),)
