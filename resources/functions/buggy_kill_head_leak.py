"""Buggy twin of KillHead: the backward forgets to zero the head, so gradient leaks through.

The forward zeroes the first n columns, so those outputs do not depend on the input at all and
their numerical derivatives are exactly 0. This backward passes grad_output through unchanged,
so the analytic Jacobian is the identity: the failing cells are exactly the n killed columns of
every row, where numerical is 0 and analytic is 1.
"""

import torch
from torch.autograd import Function

CATEGORY = "Buggy twins"
BUG = "backward returns grad_output unchanged: the first n columns are not zeroed, so gradient leaks."


class KillHead(Function):
    """Buggy: the mask is applied in forward only."""

    @staticmethod
    def forward(ctx, input, n):
        ctx.n = n
        result = input.clone()
        result[:, 0 : ctx.n] = 0
        return result

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clone(), None  # BUG: should zero result[:, 0:ctx.n] first


def example_inputs(device, dtype):
    x = torch.empty(4, 6, device=device, dtype=dtype).uniform_(-1, 1).requires_grad_()
    return x, 2
