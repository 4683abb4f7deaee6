"""Custom ops whose gradient is right and whose registration is not (namespace ``gvtest_reg``).

gradcheck passes both; ``torch.library.opcheck`` fails both, for reasons that break
torch.compile, never the gradient. Imported once (ops are global to a process) or run as a file
by ``gradviz check`` in its own process.

- ``square_no_fake``: no ``register_fake`` at all.
- ``square_wrong_fake``: a fake kernel that drops the last dimension.
"""

from __future__ import annotations

import torch


def _save_x(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _square_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * 2 * x


@torch.library.custom_op("gvtest_reg::square_no_fake", mutates_args=())
def square_no_fake(x: torch.Tensor) -> torch.Tensor:
    return x * x


square_no_fake.register_autograd(_square_backward, setup_context=_save_x)


@torch.library.custom_op("gvtest_reg::square_wrong_fake", mutates_args=())
def square_wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return x * x


@square_wrong_fake.register_fake
def _(x):
    return x.new_empty(x.shape[:-1])  # the real kernel keeps every dimension


square_wrong_fake.register_autograd(_square_backward, setup_context=_save_x)

OPS = ["square_no_fake", "square_wrong_fake"]


def example_inputs(device, dtype):
    return (torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True),)
