"""MyFunction: returns only a boolean mask, marked non-differentiable.

Source: pytorch/pytorch, test/test_autograd.py (``test_mark_non_differentiable``). Pattern: no
differentiable output at all (a bool tensor); gradcheck then only requires that the numerical
Jacobian of the floating-point outputs be zero.
The Function is fine, but gradcheck (torch 2.13) fails on it: its zero-Jacobian check subtracts
the two perturbed bool outputs and raises "Subtraction, the `-` operator, with two bool tensors
is not supported". gradviz promises gradcheck's verdict, so the expected verdict is FAIL.
"""

import torch

BUG = "Not the Function's fault: gradcheck raises on a Function whose only output is a bool tensor (it subtracts bool outputs)."


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        output = input > 0
        ctx.mark_non_differentiable(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output * 0).to(torch.double)


def example_inputs(device, dtype):
    return (torch.tensor([0.5, -1.0, 2.0, -0.25], device=device, dtype=dtype, requires_grad=True),)
