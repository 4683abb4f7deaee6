"""NumpySort: sorted values plus two integer index outputs marked non-differentiable.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (``NumpySort`` and
``NumpyTake``). Pattern: setup_context Function with a non-tensor argument (``dim``), integer
outputs passed to ``ctx.mark_non_differentiable``, and a backward that scatters the gradient back
with the inverse permutation through another custom Function.
Correct.
"""

import numpy as np
import torch

FUNCTION = "NumpySort"


class NumpyTake(torch.autograd.Function):
    @staticmethod
    def forward(x, ind, ind_inv, dim):
        picked = np.take_along_axis(x.detach().cpu().numpy(), ind.cpu().numpy(), dim)
        return torch.tensor(picked, device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim), None, None, None


class NumpySort(torch.autograd.Function):
    @staticmethod
    def forward(x, dim):
        values = x.detach().cpu().numpy()
        order = np.argsort(values, axis=dim)
        inverse = np.argsort(order, axis=dim)
        return (
            torch.tensor(np.take_along_axis(values, order, dim), device=x.device),
            torch.tensor(order, device=x.device),
            torch.tensor(inverse, device=x.device),
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        _x, dim = inputs
        _, order, inverse = output
        ctx.mark_non_differentiable(order, inverse)
        ctx.save_for_backward(order, inverse)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output, _grad_order, _grad_inverse):
        order, inverse = ctx.saved_tensors
        return NumpyTake.apply(grad_output, inverse, order, ctx.dim), None


def example_inputs(device, dtype):
    x = torch.tensor(
        [[0.3, -1.2, 2.5, 0.9, -0.4], [1.1, 0.2, -2.0, 1.7, -0.8], [-0.6, 2.2, 0.5, -1.5, 1.4]],
        device=device,
        dtype=dtype,
    )
    return (x.requires_grad_(True), 1)
