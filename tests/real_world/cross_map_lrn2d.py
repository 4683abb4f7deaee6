"""CrossMapLRN2d imported from torch.nn.modules._functions.

Source: pytorch/pytorch, torch/nn/modules/_functions.py (``CrossMapLRN2d``, the Function behind
``nn.CrossMapLRN2d``, a port of Lua Torch's local response normalisation across channels).
Pattern: a Function imported from a library module (not defined in this file); non-tensor
arguments (size, alpha, beta, k); forward and backward written with ``out=`` buffers, ``new()``
tensors resized in place and per-channel running sums.
Buggy (found while building this corpus, torch 2.13): backward does not match forward. With
size=3, alpha=0.5, beta=0.75 the Jacobians differ by up to 0.3 (1.4e-3 already at alpha=1e-3).
PyTorch's own module test uses beta=1e-3, where the difference hides under the tolerance.
"""

import torch
from torch.nn.modules._functions import CrossMapLRN2d  # noqa: F401 (checked through FUNCTION)

FUNCTION = "CrossMapLRN2d"
BUG = "torch.nn.modules._functions.CrossMapLRN2d's backward disagrees with its forward unless alpha * beta is tiny."


def example_inputs(device, dtype):
    x = torch.randn(2, 5, 2, 2, device=device, dtype=dtype, requires_grad=True)
    return (x, 3, 0.5, 0.75, 1.0)
