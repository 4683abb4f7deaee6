"""ForwardHasDefaultArgs: forward has a defaulted argument that apply is not given.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py
(``ForwardHasDefaultArgs``). Pattern: ``forward(x, idx=(2,))`` with setup_context reading the
default from ``inputs``; the output ``x[(2,)]`` is a view of the input.
Correct.
"""

import torch


class ForwardHasDefaultArgs(torch.autograd.Function):
    @staticmethod
    def forward(x, idx=(2,)):
        return x[idx]

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, idx = inputs
        ctx.x_shape = x.shape
        ctx.idx = idx

    @staticmethod
    def backward(ctx, grad_output):
        grad = grad_output.new_zeros(ctx.x_shape)
        grad[ctx.idx] = grad_output
        return grad, None


def example_inputs(device, dtype):
    return (torch.randn(3, 5, device=device, dtype=dtype, requires_grad=True),)
