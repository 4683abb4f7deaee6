"""Complex Functions, checked through their real and imaginary parts.

gradcheck checks a complex input or output through the real and imaginary parts of each
element (Wirtinger derivatives, with grad_output 1 and 1j). The same derivatives are the real
Jacobian of the Function seen through ``torch.view_as_real``: each complex input becomes a real
leaf with a trailing dimension of 2 (``[..., 0]`` real, ``[..., 1]`` imaginary), rebuilt with
``torch.view_as_complex`` before the user's ``apply``, and each complex output is returned as
``torch.view_as_real(out)``. A backward that breaks PyTorch's conjugate convention moves cells of
that real Jacobian, so every path of the check (both Jacobians, gradcheck's other checks, the
hints) works unchanged on real tensors.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from gradviz.core.hints import SIGN_FLIP
from gradviz.core.inputs import PreparedInputs

REAL_AND_IMAGINARY = "[..., 0] real part, [..., 1] imaginary part"  # how a complex tensor is read as real


class RealView:
    """A Function (class or dressed callable) seen through view_as_real, with its attributes."""

    def __init__(self, fn: Any, complex_inputs: frozenset[int]) -> None:
        self.inner = fn
        self.complex_inputs = complex_inputs
        self.__name__ = fn.__name__
        self.forward = fn.forward
        self.backward = getattr(fn, "backward", None)
        self.vjp = getattr(fn, "vjp", torch.autograd.Function.vjp)
        self.setup_context = getattr(fn, "setup_context", None)
        self._backward_cls = getattr(fn, "_backward_cls", torch.autograd.function.BackwardCFunction)

    def apply(self, *args: Any) -> Any:
        args = tuple(
            torch.view_as_complex(a) if j in self.complex_inputs and isinstance(a, torch.Tensor) else a
            for j, a in enumerate(args)
        )
        out = self.inner.apply(*args)
        if isinstance(out, tuple):
            return tuple(_real(o) for o in out)
        return _real(out)

    def __repr__(self) -> str:
        return f"<{self.__name__} through view_as_real>"


def _real(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.is_complex() and value.layout == torch.strided:
        return torch.view_as_real(value.resolve_conj())
    return value


def complex_inputs(inputs: PreparedInputs) -> frozenset[int]:
    """Positions of the differentiable inputs that are complex."""
    return frozenset(
        j for j in inputs.grad_indices if isinstance(inputs.args[j], torch.Tensor) and inputs.args[j].is_complex()
    )


def real_view(fn: Any, inputs: PreparedInputs) -> tuple[Any, PreparedInputs]:
    """``fn`` and ``inputs`` with every complex differentiable input as its real view (unchanged
    when there is none). Inputs that shared memory keep sharing it."""
    if isinstance(fn, RealView):
        return fn, inputs
    positions = complex_inputs(inputs)
    if not positions:
        return fn, inputs
    args = list(inputs.args)
    for j in positions:
        args[j] = torch.view_as_real(args[j].detach().resolve_conj()).requires_grad_()
    notes = [*inputs.notes, *(_note(inputs.names[j]) for j in sorted(positions))]
    return RealView(fn, positions), dataclasses.replace(inputs, args=tuple(args), notes=notes)


def outputs_need_real_view(outputs: tuple) -> bool:
    return any(isinstance(o, torch.Tensor) and o.is_complex() and o.layout == torch.strided for o in outputs)


def output_note() -> str:
    return (
        f"The Function returns a complex tensor: its Jacobian rows are torch.view_as_real(out) "
        f"({REAL_AND_IMAGINARY}), the derivatives gradcheck checks with grad_output 1 and 1j."
    )


def conjugate_hints(blocks: list, atol: float, rtol: float) -> None:
    """Where every failing cell is the numerical value with its sign flipped, a complex backward has
    dropped (or added) a conjugate: say that, first, instead of the real-valued sign hint."""
    for b in blocks:
        if not b.n_failing:
            continue
        a, n = b.analytic[b.failing], b.numerical[b.failing]
        if np.all(np.abs(a + n) <= atol + rtol * np.abs(n)):
            # the real-valued reading of the same pattern (a missing sign(...)) would mislead here
            b.hints = [CONJUGATE_HINT, *(h for h in b.hints if not h.startswith(SIGN_FLIP))]


CONJUGATE_HINT = (
    "On every failing cell analytic = -numerical in the real and imaginary parts: a complex backward "
    "missing (or adding) a .conj(). PyTorch wants grad_output * conj(df/dz) for a holomorphic f "
    "(see 'Autograd for Complex Numbers' in PyTorch's docs)."
)


def _note(name: str) -> str:
    return (
        f"{name} is complex: its Jacobian columns are torch.view_as_real({name}) ({REAL_AND_IMAGINARY}), "
        "the Wirtinger derivatives gradcheck checks."
    )
