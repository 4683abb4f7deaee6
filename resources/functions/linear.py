"""LinearFunction: y = x Wᵀ + b, the example of PyTorch's "Extending torch.autograd" notes.

The forward saves input, weight and the optional bias with save_for_backward; the backward
returns grad_output·W for the input, grad_outputᵀ·x for the weight and the column sums of
grad_output for the bias, skipping whatever ctx.needs_input_grad says is not wanted. The
example inputs are the ones the notes hand to gradcheck: a 20×20 input and a 30×20 weight.
"""

import torch
from torch.autograd import Function

CATEGORY = "Seed examples"


class LinearFunction(Function):
    # forward and backward are both @staticmethods; bias is optional
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    # one output, so one gradient comes in
    @staticmethod
    def backward(ctx, grad_output):
        # unpack saved tensors, start every gradient as None (trailing Nones are ignored)
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None

        # needs_input_grad checks are optional: they only save work
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)

        return grad_input, grad_weight, grad_bias


def example_inputs(device, dtype):
    input = torch.randn(20, 20, device=device, dtype=dtype, requires_grad=True)
    weight = torch.randn(30, 20, device=device, dtype=dtype, requires_grad=True)
    return input, weight
