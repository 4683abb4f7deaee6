"""MyFn: returns its input and passes grad_output back, plus surplus trailing Nones.

Source: pytorch/pytorch, test/test_autograd.py (``test_too_many_grads``). Pattern: identity
forward that returns the input object itself; backward ``return grad_output, None, None``
(extra Nones are allowed) hands autograd back the very grad_output tensor it received.
Correct.
"""

import torch


class MyFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        return input

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None, None


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),)
