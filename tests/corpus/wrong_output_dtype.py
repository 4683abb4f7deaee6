"""forward returns only an integer tensor: there is no Jacobian to compare.

Expected: exit 2, kind nothing_to_check, message "Nothing to check".

gradcheck passes this vacuously; gradviz says there was nothing to check rather than PASSED.
"""

import torch
from torch.autograd import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x).round().long()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
