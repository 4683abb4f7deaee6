"""User files for the Why? dock, settings and progress tests, written to a temp folder as a user
would save them."""

from __future__ import annotations

from pathlib import Path

# Right backward, but at float64's eps (1e-6) the finite difference loses its digits to round-off:
# |f| ~ 1e8, so f(x ± eps) differ only in their last bits. The sweep suggests eps = 0.00316.
OFFSET_SIN = '''
import torch
from torch.autograd import Function


class OffsetSin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 1e8 + torch.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x)


def example_inputs(device, dtype):
    return (torch.randn(4, device=device, dtype=dtype, requires_grad=True),)
'''

# Right, and big enough that a check takes seconds: a dense 2,500 x 2,500 Jacobian computed both
# ways, 7,500 rows and columns, reported every 50 ms by the worker.
SLOW_CUMSUM = '''
import torch
from torch.autograd import Function


class CumSum(Function):
    """The running sum, computed 50 times over: a run that lasts seconds on any machine, so the
    time left has long enough to show (one cumsum of 2500 takes about 0.5 s in all, too close to the
    half second the estimate waits for)."""

    @staticmethod
    def forward(ctx, x):
        for _ in range(49):
            torch.cumsum(x, 0)
        return torch.cumsum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        return torch.flip(torch.cumsum(torch.flip(grad, (0,)), 0), (0,))


def example_inputs(device, dtype):
    return (torch.randn(2500, device=device, dtype=dtype, requires_grad=True),)
'''

SQUARE = '''
import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text.lstrip())
    return path


def open_and_wait(qtbot, window, path: Path) -> None:
    """File → Open as the window does it (read off the GUI thread), until the text is shown."""
    with qtbot.waitSignal(window.source.loaded, timeout=20_000):
        window.open_file(path)
