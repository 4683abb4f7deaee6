"""A custom op whose argument is a list of tensors (``Tensor[]``), right backward (namespace
``gvtest_list``). Its list's tensors get gradients from autograd; gradcheck perturbs only tensors
passed as arguments of their own. Imported once, or run as a file by ``gradviz check``."""

from __future__ import annotations

import torch


@torch.library.custom_op("gvtest_list::sum_of_squares", mutates_args=())
def sum_of_squares(xs: list[torch.Tensor]) -> torch.Tensor:
    return sum(x * x for x in xs)


@sum_of_squares.register_fake
def _(xs):
    return torch.empty_like(xs[0])


def _save(ctx, inputs, output):
    ctx.save_for_backward(*inputs[0])


def _backward(ctx, grad):
    return [2 * x * grad for x in ctx.saved_tensors]


sum_of_squares.register_autograd(_backward, setup_context=_save)


def example_inputs(device, dtype):
    return ([torch.randn(3, device=device, dtype=dtype, requires_grad=True) for _ in range(2)],)
