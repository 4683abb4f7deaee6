"""DoubleDuplicate: returns the same tensor object twice.

Source: pytorch/pytorch, test/test_autograd.py (``test_return_duplicate``). Pattern: forward
``return output, output``; autograd gives both outputs a gradient slot, and backward adds both.
Correct.
"""

import torch


class DoubleDuplicate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        output = x * 2
        return output, output

    @staticmethod
    def backward(ctx, grad1, grad2):
        return grad1 * 2 + grad2 * 2


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
