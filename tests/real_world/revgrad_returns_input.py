"""RevGrad: gradient reversal that returns its input object itself.

Source: janfreyberg/pytorch-revgrad, src/pytorch_revgrad/functional.py (``RevGrad``). Pattern:
forward saves the input and returns it unchanged (``output = input_``; no view, no clone);
backward returns ``-grad_output`` when ``ctx.needs_input_grad[0]``.
Buggy for gradcheck (by design): analytic ``-I`` against numerical ``I``.
"""

import torch

BUG = "gradient reversal: forward returns the input unchanged, backward returns -grad_output."


class RevGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_):
        ctx.save_for_backward(input_)
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        grad_input = None
        if ctx.needs_input_grad[0]:
            grad_input = -grad_output
        return grad_input


def example_inputs(device, dtype):
    return (torch.randn(5, device=device, dtype=dtype, requires_grad=True),)
