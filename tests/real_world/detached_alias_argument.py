"""A "constant" argument that is a detached alias of the differentiable input: (x, x.detach()).

Source: gradviz's own red-team testing (this project). Pattern: arguments sharing memory. The
backward treats c as a constant, but c is x itself: gradcheck perturbs x in place, so c moves
too and f = x * c = x**2 has derivative 2x, not c. gradcheck fails it; so must gradviz.
"""

import torch

BUG = "the 'constant' c is x's memory, so the output is x**2 while backward returns g * c."


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, c):
        ctx.save_for_backward(c)
        return x * c

    @staticmethod
    def backward(ctx, g):
        (c,) = ctx.saved_tensors
        return g * c, None


def example_inputs(device, dtype):
    x = torch.randn(3, device=device, dtype=dtype, requires_grad=True)
    return (x, x.detach())
