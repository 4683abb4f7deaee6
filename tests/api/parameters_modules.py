"""Modules for the reproducer and window of ``gradviz.check(module, x, parameters=...)``: importable
(the reproducer and the window import their class), built with no arguments."""

from __future__ import annotations

import torch


class HalfWeightGrad(torch.autograd.Function):
    """``x @ w.T + b`` whose backward returns half of grad_weight: wrong in the weight's blocks only."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.t() + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, 0.5 * (g.t() @ x), g.sum(0)


class TanhNet(torch.nn.Module):
    """Right: Linear, tanh, a buffer that scales, a dropout left in eval mode (deterministic)."""

    def __init__(self, width: int = 2) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(3, width)
        self.drop = torch.nn.Dropout(0.5)
        self.register_buffer("scale", torch.tensor(1.5))

    def forward(self, x):
        return self.drop(torch.tanh(self.layer(x))) * self.scale


class WrongWeightNet(torch.nn.Module):
    """Its Linear goes through HalfWeightGrad: the input's blocks pass, the weight's fail."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(3, 2)

    def forward(self, x):
        return HalfWeightGrad.apply(x, self.layer.weight, self.layer.bias)


class NeedsWidth(TanhNet):
    """``__init__`` needs an argument gradviz never saw: cannot be rebuilt elsewhere."""

    def __init__(self, width: int) -> None:
        super().__init__(width)
