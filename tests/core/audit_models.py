"""Models built from custom nodes, as users write them, and buggy twins whose bug shows only at
the activations the model really produces.

``TinyTransformer``: a pre-norm transformer block (custom RMSNorm, custom attention, a custom op
for every projection, a custom capped activation) and a head that scales its input up before
the same activation. ``capped_twin`` uses ``BadLeakyCapFn``, whose backward ignores the cap: it
passes gradcheck at ``randn`` inputs and fails only where ``|x| > 3``, i.e. in the head.
``TwoNorms`` normalises one row, then several, with ``BadRMSNormFn``, whose weight gradient
forgets to sum over rows: right for the first call, wrong for the second. ``gradviz audit
tests/core/audit_models.py:capped_twin`` takes its inputs from ``example_inputs`` below.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from resources.functions.fused_conv_bn import FusedConvBN

CAP = 3.0  # LeakyCap's slope is 1 inside [-CAP, CAP] and LEAK beyond
LEAK = 0.1
WIDTH, SEQ = 8, 4


class LeakyCapFn(torch.autograd.Function):
    """x inside [-3, 3], a slope of 0.1 beyond: a soft clamp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        edge = torch.sign(x) * CAP
        return torch.where(x.abs() <= CAP, x, edge + LEAK * (x - edge))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.where(x.abs() <= CAP, 1.0, LEAK)


class BadLeakyCapFn(LeakyCapFn):
    """The same forward; the backward forgets the cap (slope 1 everywhere)."""

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()


class SoftplusFn(torch.autograd.Function):
    """log(1 + exp(x))."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x)


class BadSoftplusFn(SoftplusFn):
    """sigmoid(|x|) for sigmoid(x): right for x >= 0 (where a test with torch.rand looks), wrong below."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x.abs())


class RMSNormFn(torch.autograd.Function):
    """y = x * w / sqrt(mean(x^2) + eps) over the last dimension."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, r)
        return x * r * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight, r = ctx.saved_tensors
        gw = grad * weight
        gx = r * gw - x * r.pow(3) * (gw * x).mean(-1, keepdim=True)
        gweight = (grad * x * r).reshape(-1, x.shape[-1]).sum(0)
        return gx, gweight, None


class BadRMSNormFn(RMSNormFn):
    """The weight's gradient takes the first row only: right for one row, wrong for several."""

    @staticmethod
    def backward(ctx, grad):
        gx, _, _ = RMSNormFn.backward(ctx, grad)
        x, _, r = ctx.saved_tensors
        return gx, (grad * x * r).reshape(-1, x.shape[-1])[0], None


class AttentionFn(torch.autograd.Function):
    """softmax(q k^T / sqrt(d)) v."""

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        gv = p.transpose(-1, -2) @ grad
        gp = grad @ v.transpose(-1, -2)
        gs = p * (gp - (gp * p).sum(-1, keepdim=True)) * ctx.scale
        return gs @ k, gs.transpose(-1, -2) @ q, gv


@torch.library.custom_op("gvaudit::matmul", mutates_args=())
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a (..., n, k) @ b (k, m)."""
    return a @ b


@matmul.register_fake
def _(a, b):
    return a.new_empty((*a.shape[:-1], b.shape[-1]))


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _matmul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    ga = grad @ b.transpose(-1, -2)
    gb = a.reshape(-1, a.shape[-1]).transpose(0, 1) @ grad.reshape(-1, grad.shape[-1])
    return ga, gb


matmul.register_autograd(_matmul_backward, setup_context=_matmul_setup)


class Linear(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out, dtype=torch.float64) * (0.5 / math.sqrt(d_in)))

    def forward(self, x):
        return matmul(x, self.weight)


class RMSNorm(nn.Module):
    def __init__(self, d: int, fn: type[torch.autograd.Function] = RMSNormFn) -> None:
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d, dtype=torch.float64))
        self.fn = fn

    def forward(self, x):
        return self.fn.apply(x, self.weight, 1e-6)


class Activation(nn.Module):
    def __init__(self, fn: type[torch.autograd.Function]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn.apply(x)


class Attention(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = Linear(d, d), Linear(d, d), Linear(d, d), Linear(d, d)

    def forward(self, x):
        return self.o(AttentionFn.apply(self.q(x), self.k(x), self.v(x)))


class MLP(nn.Module):
    def __init__(self, d: int, act: type[torch.autograd.Function]) -> None:
        super().__init__()
        self.up, self.act, self.down = Linear(d, 2 * d), Activation(act), Linear(2 * d, d)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class Block(nn.Module):
    def __init__(self, d: int, act: type[torch.autograd.Function]) -> None:
        super().__init__()
        self.norm1, self.attn = RMSNorm(d), Attention(d)
        self.norm2, self.mlp = RMSNorm(d), MLP(d, act)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Head(nn.Module):
    """Scales the block's output up before the activation: activations well beyond the cap."""

    def __init__(self, act: type[torch.autograd.Function], gain: float = 10.0) -> None:
        super().__init__()
        self.gain, self.act = gain, Activation(act)

    def forward(self, x):
        return self.act(x * self.gain)


class TinyTransformer(nn.Module):
    def __init__(self, d: int = WIDTH, act: type[torch.autograd.Function] = LeakyCapFn) -> None:
        super().__init__()
        self.block, self.head = Block(d, act), Head(act)

    def forward(self, x):
        return self.head(self.block(x))


def transformer() -> TinyTransformer:
    """The correct model, with fixed weights."""
    torch.manual_seed(0)
    return TinyTransformer()


def capped_twin() -> TinyTransformer:
    """The same model with BadLeakyCapFn: wrong in the head only."""
    torch.manual_seed(0)
    return TinyTransformer(act=BadLeakyCapFn)


class TwoNorms(nn.Module):
    """One row normalised by ``first``, then all of them by ``rest``."""

    def __init__(self, d: int = WIDTH, fn: type[torch.autograd.Function] = BadRMSNormFn) -> None:
        super().__init__()
        self.first, self.rest = RMSNorm(d, fn), RMSNorm(d, fn)

    def forward(self, x):
        return torch.cat([self.first(x[..., :1, :]), self.rest(x)], dim=-2)


class ConvNet(nn.Module):
    """Two fused conv + batch-norm layers (gradviz's own conv-BN example) with an activation between."""

    def __init__(self, act: type[torch.autograd.Function] = SoftplusFn) -> None:
        super().__init__()
        self.conv1, self.act, self.conv2 = FusedConvBN(2, 3, 3), Activation(act), FusedConvBN(3, 2, 2)

    def forward(self, x):
        return self.conv2(self.act(self.conv1(x)))


def conv_net(act: type[torch.autograd.Function] = SoftplusFn) -> ConvNet:
    torch.manual_seed(0)
    return ConvNet(act).double()


def image() -> torch.Tensor:
    return torch.randn(1, 2, 5, 5, dtype=torch.float64)


def example_inputs(device, dtype):
    """One sequence of SEQ tokens of width WIDTH; requires grad as a model input would in training."""
    return (torch.randn(1, SEQ, WIDTH, device=device, dtype=dtype, requires_grad=True),)
