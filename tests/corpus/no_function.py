"""Plain functions only: no torch.autograd.Function subclass.

Expected: exit 2, kind no_function, message "No torch.autograd.Function subclass".
"""

import torch


def square(x):
    return x * x


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
