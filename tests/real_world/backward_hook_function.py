"""BackwardHookFunction imported from torch.nn.modules._functions.

Source: pytorch/pytorch, torch/nn/modules/_functions.py (``BackwardHookFunction``, which
``nn.Module`` full backward hooks wrap around a module's inputs and outputs). Pattern: an
imported Function with ``*args`` that returns its inputs themselves, marks the ones that do not
require grad as non-differentiable, and passes every gradient straight through
(``return args``: backward returns the grad_output tensors it was given).
Correct.
"""

import torch
from torch.nn.modules._functions import BackwardHookFunction  # noqa: F401 (checked through FUNCTION)

FUNCTION = "BackwardHookFunction"


def example_inputs(device, dtype):
    return (
        torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),
        torch.randn(4, device=device, dtype=dtype),
        torch.randn(3, device=device, dtype=dtype, requires_grad=True),
    )
