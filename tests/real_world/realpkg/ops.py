"""Custom Functions kept in their own module and imported by corpus files.

- ``MyCube``: the ``setup_context`` example of PyTorch's "Extending torch.autograd" notes
  (docs/source/notes/extending.rst): forward returns the cube and its derivative, and backward
  takes a gradient for both.
- ``ClampSTE``: the step-with-clamped-gradient estimator of ChongTang09/BinarizeAutoencoder
  (ste.py): forward ``(x > 0)``, backward passes ``grad.clamp(-1, 1)`` straight through.
"""

import torch


class MyCube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x**3, 3 * x**2

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        _, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_cube, grad_dx):
        x, dx = ctx.saved_tensors
        return grad_cube * dx + grad_dx * 6 * x


class ClampSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clamp(-1, 1)
