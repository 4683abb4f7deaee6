"""A backward that reads ``grad_output.data``, as many older Functions do.

Source: gradviz's own red-team testing (this project). Pattern: ``.data`` in backward. Correct.
``.data`` of a tensor batched by legacy vmap crashes the process: a checker that batches must
not blame the user's code for that.
"""

import torch


class Sq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g.data


def example_inputs(device, dtype):
    return (torch.randn(40, device=device, dtype=dtype, requires_grad=True),)
