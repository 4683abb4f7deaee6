"""Buggy twin of LinearFunction with bias: the bias gradient sums over the wrong axis.

grad_bias must add grad_output over the batch (dim 0), giving one value per output feature.
Summing over dim 1 adds over features instead. The shapes only agree because the example's
batch size equals the number of output features (5), which is why this bug survives until the
batch size changes. Input and weight blocks pass; the bias block fails almost everywhere.
"""

import torch
from torch.autograd import Function

CATEGORY = "Buggy twins"
BUG = "grad_bias = grad_output.sum(1) sums over features instead of the batch (dim 0)."


class LinearFunction(Function):
    """Buggy: grad_bias reduces over dim 1."""

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
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(1)  # BUG: should be grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


def example_inputs(device, dtype):
    input = torch.randn(5, 3, device=device, dtype=dtype, requires_grad=True)
    weight = torch.randn(5, 3, device=device, dtype=dtype, requires_grad=True)
    bias = torch.randn(5, device=device, dtype=dtype, requires_grad=True)
    return input, weight, bias
