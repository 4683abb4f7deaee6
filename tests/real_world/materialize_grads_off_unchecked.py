"""SimpleFunc switched to ``set_materialize_grads(False)`` without adding the None checks.

Source: pytorch/pytorch, torch/autograd/function.py (docstring of
``FunctionCtx.set_materialize_grads``: ``SimpleFunc``'s backward ``g1 + g2`` is only safe while
grads are materialized; "We must check for None now" once they are not). Pattern: two outputs,
one of which gets no gradient when only the other is used.
Buggy (a realistic slip): ``g1 + g2`` raises TypeError when one output gradient is None.
"""

import torch
from torch.autograd.function import once_differentiable

BUG = "set_materialize_grads(False) but backward adds g1 + g2 without checking for None: it raises when one output is unused."


class SimpleFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):
        return g1 + g2


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
