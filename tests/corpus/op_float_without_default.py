"""A custom op whose float argument has no default, and no example_inputs: gradviz cannot make the
float up (a random tensor for it ends in a cast error deep inside torch), so it says which argument
it needs and how to give it.

Expected: exit 2, kind example_inputs, message "argument alpha (float) has no default".
"""

import torch


@torch.library.custom_op("gvcorpus_nodefault::scale", mutates_args=())
def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha


@scale.register_fake
def _(x, alpha):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    ctx.alpha = inputs[1]


def backward(ctx, grad):
    return grad * ctx.alpha, None


scale.register_autograd(backward, setup_context=setup_context)
