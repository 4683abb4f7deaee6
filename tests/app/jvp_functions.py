"""Functions with a jvp staticmethod for the window's forward-mode tests (tests/app/test_gradcheck_options_window.py):
the text is loaded into the editor and run by the real worker; the verdicts come from
torch.autograd.gradcheck(check_forward_ad=True) on the same inputs."""

from __future__ import annotations

import torch


class SquareJvp(torch.autograd.Function):
    """Right backward, right jvp."""

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return 2 * x * x_t


class WrongJvp(SquareJvp):
    """Right backward, its jvp a factor off: only forward mode sees it."""

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return 2.5 * x * x_t


def example_inputs(device, dtype):
    """Fixed values (no random numbers), so the worker and the oracle see the same input."""
    x = torch.linspace(-1.5, 2.0, 12, device=device, dtype=dtype).reshape(3, 4)
    return (x.requires_grad_(),)
