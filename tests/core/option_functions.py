"""Functions for gradcheck's opt-in options (fast_mode, check_batched_grad, masked): each verdict
comes from torch.autograd.gradcheck with the same options, never typed. Also a CLI target."""

from __future__ import annotations

import torch


class Square(torch.autograd.Function):
    """Right."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class WrongFactor(Square):
    """A constant factor off: every check fails it."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.5 * x * g


class NumpyBackward(Square):
    """Right, but its backward leaves torch: gradcheck's prototype vmap cannot batch it."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(2 * x.detach().numpy() * g.detach().numpy())


class OneCellOff(Square):
    """One cell off by 1% of grad_output: the element-wise comparison fails it, fast mode's
    projections (atol scaled by sum|u|·sum|v|) pass it."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gx = (2 * x * g).clone()
        gx.reshape(-1)[0] += 0.01 * g.reshape(-1)[0]
        return gx


class InPlaceGradOutput(torch.autograd.Function):
    """Right values, but backward writes into grad_output: fast mode reuses its v and batched
    grad its grad_outputs, so both fail it while the element-wise check passes."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g.mul_(x.cos())


class NoneGradOutput(torch.autograd.Function):
    """Right values, but with materialize_grads off it answers an undefined grad_output with a
    non-zero gradient: gradcheck's undefined-gradient test fails it, check_undefined_grad=False
    passes it."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.ones_like(x) if g is None else 2 * x * g


FUNCTIONS = [Square, WrongFactor, NumpyBackward, OneCellOff, InPlaceGradOutput, NoneGradOutput]


def example_inputs(device, dtype):
    """Fixed values (no random numbers), so the CLI's worker and the test see the same input."""
    x = torch.linspace(-1.5, 2.0, 64, device=device, dtype=dtype).reshape(8, 8)
    return (x.requires_grad_(),)
