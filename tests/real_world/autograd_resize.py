"""Resize imported from torch.autograd._functions.tensor.

Source: pytorch/pytorch, torch/autograd/_functions/tensor.py (``Resize``, "TODO: deprecate
this"). Pattern: a Function imported from a library module; a non-tensor ``sizes`` tuple; for a
contiguous input, forward returns ``tensor.new(tensor).contiguous().view(*sizes)``, which shares
the input's storage; backward returns ``grad_output.contiguous().view(input_sizes)``, a view of
the gradient it was handed.
Correct.
"""

import torch
from torch.autograd._functions.tensor import Resize  # noqa: F401 (checked through FUNCTION)

FUNCTION = "Resize"


def example_inputs(device, dtype):
    return (torch.randn(2, 6, device=device, dtype=dtype, requires_grad=True), (3, 4))
