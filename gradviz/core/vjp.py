"""``torch.autograd.grad`` without its first-call import of sympy.

The first ``autograd.grad`` with explicit grad_outputs in a process imports
``torch.fx.experimental.symbolic_shapes`` (and with it sympy) only to check that each
grad_output has its output's shape: 0.3-0.4 s, more than a whole check of a small Function and
paid by every fresh worker, CLI call and notebook. gradviz builds every grad_output itself, with
its output's shape, dtype, device and layout, so that check can never fail here; ``vjp`` asks the
autograd engine directly, exactly as ``autograd.grad`` then does (same engine call, same vmap
for batched grad_outputs). Anything else (tensor subclasses, nested tensors, a grad_output that
does not match) goes through ``autograd.grad`` itself, checks and all.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch._vmap_internals import _vmap
from torch.autograd.graph import _engine_run_backward
from torch.overrides import has_torch_function

Grads = tuple[torch.Tensor | None, ...]


def vjp(
    outputs: Sequence[torch.Tensor],
    inputs: Sequence[torch.Tensor],
    grad_outputs: Sequence[torch.Tensor],
    *,
    retain_graph: bool = False,
    allow_unused: bool = True,
    batched: bool = False,
) -> Grads:
    """``torch.autograd.grad(outputs, inputs, grad_outputs, ...)`` (``batched``: ``is_grads_batched``)."""
    outputs, inputs, grad_outputs = tuple(outputs), tuple(inputs), tuple(grad_outputs)
    if not _matches(outputs, inputs, grad_outputs, batched):
        return torch.autograd.grad(
            outputs, inputs, grad_outputs, retain_graph=retain_graph, allow_unused=allow_unused,
            is_grads_batched=batched,
        )

    def run(gs: tuple) -> Grads:
        return _engine_run_backward(outputs, gs, retain_graph, False, inputs, allow_unused, accumulate_grad=False)

    if batched:
        return _vmap(run, 0, 0, allow_none_pass_through=True)(grad_outputs)
    return run(grad_outputs)


def backward(outputs: Sequence[torch.Tensor], grad_outputs: Sequence[torch.Tensor], *, inputs: Sequence[torch.Tensor] | None, retain_graph: bool = False) -> None:
    """``torch.autograd.backward`` (gradients accumulate into ``.grad``), without the sympy import."""
    outputs, grad_outputs = tuple(outputs), tuple(grad_outputs)
    leaves = tuple(inputs or ())
    if not _matches(outputs, leaves, grad_outputs, False):
        torch.autograd.backward(outputs, grad_outputs, retain_graph=retain_graph, inputs=inputs or None)
        return
    _engine_run_backward(outputs, grad_outputs, retain_graph, False, leaves, allow_unreachable=True, accumulate_grad=True)


def _matches(outputs: tuple, inputs: tuple, grad_outputs: tuple, batched: bool) -> bool:
    """Whether ``autograd.grad``'s own argument handling would pass every value through unchanged."""
    if not outputs or len(grad_outputs) != len(outputs):
        return False
    tensors = outputs + inputs + grad_outputs
    if not all(type(t) is torch.Tensor for t in tensors) or has_torch_function(tensors):
        return False
    for out, grad in zip(outputs, grad_outputs):
        shape = grad.shape[1:] if batched else grad.shape
        if (
            out.is_nested
            or grad.is_nested
            or shape != out.shape
            or grad.dtype != out.dtype
            or grad.device != out.device
            or grad.layout != torch.strided
            or out.layout != torch.strided
            or not out.requires_grad
        ):
            return False
    return True
