"""An endless loop in backward (pure Python, never releasing the interpreter).

Expected: exit 2, kind timeout, message "did not finish within 3 s", line 19.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        while True: pass  # <- expected line (one line: the stack lands here)
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
