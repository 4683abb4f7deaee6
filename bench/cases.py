"""The Functions the speed benchmarks measure, each as a source file gradviz can also load.

matmul n x n @ n x n (two n^2 x n^2 blocks), an elementwise SiLU, the tutorial's Conv2D and the
fused conv-BN of the built-in library. Each case gives its source text (for the CLI and the
cold runs) and builds its Function and inputs in-process (for the warm runs).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradviz.core.loader import LoadedSource, choose_function, load_source
from gradviz.schema.library import find_builtin

HEADER = "import torch\nimport torch.nn.functional as F\n"

MATMUL = HEADER + '''
class MatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.t(), a.t() @ g


def example_inputs(device, dtype):
    g = torch.Generator(device="cpu").manual_seed(0)
    make = lambda: torch.randn({n}, {n}, generator=g, dtype=dtype).to(device).requires_grad_()
    return (make(), make())
'''

SILU = HEADER + '''
class SiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * s * (1 + x * (1 - s))


def example_inputs(device, dtype):
    g = torch.Generator(device="cpu").manual_seed(0)
    return (torch.randn({n}, generator=g, dtype=dtype).to(device).requires_grad_(),)
'''

CONV2D = HEADER + '''
class Conv2D(torch.autograd.Function):
    """The tutorial's Conv2D: bias-free, stride 1, no padding; backward by the convolution rules."""

    @staticmethod
    def forward(ctx, X, weight):
        ctx.save_for_backward(X, weight)
        return F.conv2d(X, weight)

    @staticmethod
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        grad_X = F.conv_transpose2d(grad_out, weight)
        grad_w = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        return grad_X, grad_w


def example_inputs(device, dtype):
    g = torch.Generator(device="cpu").manual_seed(0)
    X = torch.randn(2, 3, 8, 8, generator=g, dtype=dtype).to(device).requires_grad_()
    w = torch.randn(4, 3, 3, 3, generator=g, dtype=dtype).to(device).requires_grad_()
    return (X, w)
'''


@dataclass
class Case:
    name: str
    source: str

    def load(self) -> tuple[type[torch.autograd.Function], tuple]:
        """The Function class and its float64 CPU inputs, built in this process."""
        loaded = self.loaded()
        return choose_function(loaded), tuple(loaded.example_inputs(torch.device("cpu"), torch.float64))

    def loaded(self) -> LoadedSource:
        """The case through gradviz's own loader, as a user's file is loaded: with its source
        known, gradviz can tell the Function never reads ``.data`` and batches it."""
        return load_source(self.source, f"<{self.name}>")


def matmul(n: int) -> Case:
    return Case(f"matmul {n}", MATMUL.replace("{n}", str(n)))


def silu(n: int) -> Case:
    return Case(f"SiLU {n}", SILU.replace("{n}", str(n)))


def conv2d() -> Case:
    return Case("Conv2D", CONV2D)


def fused_conv_bn() -> Case:
    return Case("fused conv-BN", find_builtin("fused_conv_bn").read_text(encoding="utf-8"))


def scaling_cases(quick: bool = False) -> list[Case]:
    sizes = (8, 16, 32, 64) if quick else (8, 16, 32, 48, 64, 80, 96)
    elements = (256, 1024) if quick else (256, 1024, 4096, 8192)
    # SiLU 1 comes first: a one-cell check is all fixed cost (scaling.py reads it so)
    return [silu(1), *(matmul(n) for n in sizes), *(silu(m) for m in elements), conv2d(), fused_conv_bn()]
