"""Functions whose failing checks invite contradictory diagnoses.

Source: written for gradviz (this project): float32 round-off, float32 arithmetic inside a float64
forward (mixed-precision code), and straight-through estimators (BinaryConnect, DoReFa, BitNet).

Pattern (a): float32 checks. ``Cube`` is right; in float32 at gradcheck's eps=1e-6 its cells fail
from round-off alone. ``CubeWrong`` has a wrong backward (3x where 3x² belongs): wrong in any dtype.
Pattern (b): a float64 Function whose forward computes in float32 inside (``x.float().sin().double()``).
``SinViaFloat32`` has the right backward (cos x, in float64): its failing cells are the forward's
float32 noise. ``SinViaFloat32Wrong``'s backward is wrong (cos x + 0.5·x).
Pattern (c): straight-through estimators. The forward is piecewise constant (round, sign, floor), the
backward passes grad_output through (or clipped to |x| <= 1): finite differences see 0 almost
everywhere, by design.
"""

import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


class CubeWrong(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g  # 3x² belongs


class SinViaFloat32(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.float().sin().to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x.cos() * g


class SinViaFloat32Wrong(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.float().sin().to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (x.cos() + 0.5 * x) * g  # cos x alone belongs


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g


class FloorSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.floor()

    @staticmethod
    def backward(ctx, g):
        return g.clone()


class ClippedSignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sign()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)


def example_inputs(device, dtype):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=generator, dtype=torch.float64) * 1.5 + 0.3
    return (x.to(device=device, dtype=dtype).requires_grad_(True),)


class NoisyScale(torch.autograd.Function):
    """Right backward for x·s, but the forward draws s = 1 + 1e-4·u afresh on every call."""

    @staticmethod
    def forward(ctx, x):
        return x * (1 + 1e-4 * torch.rand_like(x))

    @staticmethod
    def backward(ctx, g):
        return g


class ReluViaFloat32(torch.autograd.Function):
    """Right backward; the forward is relu computed in float32: kinks at 0 and float32 round-off elsewhere."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.float().relu().to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x > 0).to(g.dtype)


def relu_inputs(device, dtype):
    """Two entries exactly on relu's kink at 0, the others away from it."""
    x = torch.tensor([0.0, 0.7, -0.4, 1.3, 0.0, 2.1], dtype=torch.float64)
    return (x.to(device=device, dtype=dtype).requires_grad_(True),)
