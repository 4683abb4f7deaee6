"""NumpyExp_: exponentiates its input in place through NumPy and marks it dirty.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (``NumpyExp_``).
Pattern: in-place Function; ``ctx.mark_dirty(x)`` is called in ``setup_context`` (forward
without ctx), forward returns the very tensor it modified, and backward multiplies by the saved
output.
Correct.
"""

import numpy as np
import torch


class NumpyExp_(torch.autograd.Function):
    @staticmethod
    def forward(x):
        buffer = x.detach().numpy()  # shares memory with x
        np.exp(buffer, out=buffer)
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.mark_dirty(x)
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype).mul_(0.5).requires_grad_(True),)
