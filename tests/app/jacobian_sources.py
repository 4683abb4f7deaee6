"""Functions the Jacobian-view tests check with the real core (``make_check_result(source=...)``).

Each is a user's file as the editor would hold it: a Function and its ``example_inputs``.
"""

from __future__ import annotations

# One 900x900 block, which a careless layout squeezes to 215x45 px at 1280x720. The backward
# forgets the 3 of 3x^2 on the odd elements, so the block fails on half its diagonal.
SQUARE_900 = '''
import torch
from torch.autograd import Function


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        factor = torch.full_like(x, 3.0)
        factor[1::2] = 1.0  # BUG: the odd elements lose the 3
        return grad * factor * x**2


def example_inputs(device, dtype):
    return (torch.randn(900, device=device, dtype=dtype, requires_grad=True),)
'''

# 2 inputs, 2 outputs, four blocks of four shapes; the backward is wrong in block (out1, y) only.
TWO_BY_TWO = '''
import torch
from torch.autograd import Function


class OuterAndScale(Function):
    """out0 = outer(x, y) flattened (40 elements), out1 = sum(x) * y (5 elements)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.outer(x, y).reshape(-1), x.sum() * y

    @staticmethod
    def backward(ctx, grad_outer, grad_scaled):
        x, y = ctx.saved_tensors
        grad_outer = grad_outer.reshape(x.shape[0], y.shape[0])
        grad_x = grad_outer @ y + (grad_scaled * y).sum()
        grad_y = grad_outer.t() @ x + 2 * x.sum() * grad_scaled  # BUG: the 2 (block out1, y only)
        return grad_x, grad_y


def example_inputs(device, dtype):
    x = torch.randn(8, device=device, dtype=dtype, requires_grad=True)
    y = torch.randn(5, device=device, dtype=dtype, requires_grad=True)
    return x, y
'''

# One 3000x3000 block whose values run from 0 to 1 (a lower triangle of ones): a colour bar with
# too many ticks draws them over one another ("-0.9-0.8-0.7...").
CUMSUM_3000 = '''
import torch
from torch.autograd import Function


class CumSum(Function):
    @staticmethod
    def forward(ctx, x):
        return x.cumsum(0)

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(0).cumsum(0).flip(0)


def example_inputs(device, dtype):
    return (torch.randn(3000, device=device, dtype=dtype, requires_grad=True),)
'''
