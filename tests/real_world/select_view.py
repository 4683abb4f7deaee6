"""Select: forward returns ``x[idx]``, a view of its input.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (``Select``).
Pattern: setup_context Function whose output is a view of the input (basic indexing with an
int), a non-tensor argument, and a backward that scatters into ``new_zeros``.
Correct.
"""

import torch


class Select(torch.autograd.Function):
    @staticmethod
    def forward(x, idx):
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
    return (torch.randn(3, 5, device=device, dtype=dtype, requires_grad=True), 2)
