"""Custom operators (``torch.library.custom_op`` + ``register_autograd``), right and wrong.

Ops are global to the process: they live in the ``gvtest_cop`` namespace, defined once at module
scope, and this module is imported (never run twice in one process). Each wrong op has one bug:

- ``cube``: right (backward 3x²).
- ``cube_wrong_backward``: backward 2x² (opcheck passes it: it never compares derivatives).
- ``cube_wrong_fake``: the fake (meta) kernel gives the wrong shape (opcheck's test_faketensor).
- ``cube_wrong_schema``: counts its calls in its input ``calls`` without declaring ``mutates_args``
  (opcheck's test_schema); its gradient is right.
- ``affine``: right, three tensors named ``x``, ``weight``, ``bias``.
"""

from __future__ import annotations

import torch


def _save_x(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def _cube_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * 3 * x * x


@torch.library.custom_op("gvtest_cop::cube", mutates_args=())
def cube(x: torch.Tensor) -> torch.Tensor:
    return x * x * x


@cube.register_fake
def _(x):
    return torch.empty_like(x)


cube.register_autograd(_cube_backward, setup_context=_save_x)


@torch.library.custom_op("gvtest_cop::cube_wrong_backward", mutates_args=())
def cube_wrong_backward(x: torch.Tensor) -> torch.Tensor:
    return x * x * x


@cube_wrong_backward.register_fake
def _(x):
    return torch.empty_like(x)


def _wrong_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * 2 * x * x  # should be 3 x²


cube_wrong_backward.register_autograd(_wrong_backward, setup_context=_save_x)


@torch.library.custom_op("gvtest_cop::cube_wrong_fake", mutates_args=())
def cube_wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return x * x * x


@cube_wrong_fake.register_fake
def _(x):
    return x.new_empty(x.shape[:-1])  # the real kernel keeps every dimension


cube_wrong_fake.register_autograd(_cube_backward, setup_context=_save_x)


@torch.library.custom_op("gvtest_cop::cube_wrong_schema", mutates_args=())
def cube_wrong_schema(x: torch.Tensor, calls: torch.Tensor) -> torch.Tensor:
    calls.add_(1)  # counts its calls in ``calls``, which mutates_args=() does not declare
    return x * x * x


@cube_wrong_schema.register_fake
def _(x, calls):
    return torch.empty_like(x)


def _save_x_of_two(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _cube_backward_of_two(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * 3 * x * x, None


cube_wrong_schema.register_autograd(_cube_backward_of_two, setup_context=_save_x_of_two)


@torch.library.custom_op("gvtest_cop::affine", mutates_args=())
def affine(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return x * weight + bias


@affine.register_fake
def _(x, weight, bias):
    return torch.empty_like(x)


def _save_affine(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight)


def _affine_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    return grad * weight, grad * x, grad


affine.register_autograd(_affine_backward, setup_context=_save_affine)

OPS = ["cube", "cube_wrong_backward", "cube_wrong_fake", "cube_wrong_schema", "affine"]
FUNCTION = "gvtest_cop::cube_wrong_backward"


def example_inputs(device, dtype):
    """The cubes' one argument; the others take ``INPUTS[name]`` (see ``inputs_for``)."""
    return (torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True),)


def inputs_for(name, device="cpu", dtype=torch.float64):
    """The arguments of the op ``name`` (a global of this module)."""
    if name == "affine":
        return tuple(torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    if name == "cube_wrong_schema":
        return (*example_inputs(device, dtype), torch.zeros((), device=device, dtype=dtype))
    return example_inputs(device, dtype)
