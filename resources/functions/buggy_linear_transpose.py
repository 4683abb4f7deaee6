"""Buggy twin of LinearFunction: the input gradient uses Wᵀ instead of W.

grad_input should be grad_output·W. Writing grad_output·Wᵀ is a classic slip that only runs
because the example's weight is square (20×20); with the notes' 30×20 weight it would fail
with a shape error, which is how such a bug usually hides until the shapes change. In the
error map the weight block passes and every off-diagonal cell of the input block fails.
"""

import torch
from torch.autograd import Function

CATEGORY = "Buggy twins"
BUG = "grad_input = grad_output.mm(weight.t()): an extra transpose, hidden by a square weight."


class LinearFunction(Function):
    """Buggy: grad_input multiplies by weight.t() instead of weight."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight.t())  # BUG: should be grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


def example_inputs(device, dtype):
    input = torch.randn(6, 5, device=device, dtype=dtype, requires_grad=True)
    weight = torch.randn(5, 5, device=device, dtype=dtype, requires_grad=True)
    return input, weight
