"""NumpyCube: a setup_context Function that computes in NumPy and returns two outputs.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (``NumpyCube`` and
``NumpyMul``). Pattern: forward without ctx (PyTorch >= 2.0) leaves autograd and returns
``x**3`` and its derivative ``3 x**2``; backward takes a gradient for both outputs and calls
another custom Function (``NumpyMul``) to multiply.
Correct.
"""

import numpy as np
import torch

FUNCTION = "NumpyCube"


def as_numpy(t):
    return t.detach().cpu().numpy()


class NumpyMul(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return torch.tensor(np.multiply(as_numpy(x), as_numpy(y)), device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        gx = NumpyMul.apply(grad_output, y) if ctx.needs_input_grad[0] else None
        gy = NumpyMul.apply(grad_output, x) if ctx.needs_input_grad[1] else None
        return gx, gy


class NumpyCube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        x_np = as_numpy(x)
        return torch.tensor(x_np**3, device=x.device), torch.tensor(3 * x_np**2, device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, grad_output, grad_slope):
        x, slope = ctx.saved_tensors
        return NumpyMul.apply(grad_output, slope) + 6 * NumpyMul.apply(grad_slope, x)


def example_inputs(device, dtype):
    return (torch.empty(4, device=device, dtype=dtype).uniform_(0.8, 2.0).requires_grad_(True),)
