"""KillHead: set the first n columns of a 2-D tensor to zero (EE-559, "Writing an autograd function").

The forward clones its input and zeroes columns 0..n-1; the backward does the same to the
incoming gradient, because those outputs no longer depend on the input. n is a Python int,
kept on ctx, and gets None as its gradient. In the Jacobian the first n columns of every row
block are zero: a clear picture of a mask in backward. The inputs are the lecture's: a 10×20
tensor uniform in [-1, 1] and n = 4.
"""

import torch
from torch.autograd import Function

CATEGORY = "Seed examples"


class KillHead(Function):
    @staticmethod
    def forward(ctx, input, n):
        ctx.n = n
        result = input.clone()
        result[:, 0 : ctx.n] = 0
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result = grad_output.clone()
        result[:, 0 : ctx.n] = 0
        return result, None


def example_inputs(device, dtype):
    x = torch.empty(10, 20, device=device, dtype=dtype).uniform_(-1, 1).requires_grad_()
    return x, 4
