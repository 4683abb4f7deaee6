"""The rest of gradcheck's checks, each reported on its own with a sentence of detail.

``gradviz check --all-checks`` runs them after the Jacobians: reentrancy (two backward passes
agree), undefined output gradients, zero output gradients, and double backward
(``gradgradcheck``). A Function whose backward is ``@once_differentiable`` has declared that
it has no double backward, which is reported as such rather than as a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from gradviz.core.jacobian import analytical_jacobian, call_apply

PASSED, FAILED, DECLARED = "passed", "failed", "not supported (declared)"


@dataclass
class ExtraCheck:
    name: str
    status: str  # PASSED, FAILED or DECLARED
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    def to_dict(self) -> dict:
        return asdict(self)


def is_once_differentiable(fn: type[torch.autograd.Function]) -> bool:
    """once_differentiable wraps backward with functools.wraps, which leaves __wrapped__."""
    backward = fn.backward
    wrapped = getattr(backward, "__wrapped__", None)
    return wrapped is not None and backward.__code__.co_filename.endswith("function.py")


def run_extra_checks(
    fn: type[torch.autograd.Function],
    args: tuple,
    in_indices: list[int],
    *,
    eps: float,
    atol: float,
    rtol: float,
    nondet_tol: float = 0.0,
) -> list[ExtraCheck]:
    leaves = [args[j] for j in in_indices]
    checks: list[Callable[[], ExtraCheck]] = [
        lambda: check_reentrant(fn, args, leaves, in_indices, nondet_tol),
        lambda: check_output_grads(fn, args, leaves, undefined=True),
        lambda: check_output_grads(fn, args, leaves, undefined=False),
        lambda: check_double_backward(fn, args, eps=eps, atol=atol, rtol=rtol),
    ]
    results = []
    for check in checks:
        results.append(check())
    return results


def _differentiable_outputs(fn, args) -> list[torch.Tensor]:
    with torch.enable_grad():
        outputs = call_apply(fn.apply, args, clone=True)
    return [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]


def check_reentrant(fn, args, leaves, in_indices, nondet_tol: float) -> ExtraCheck:
    """Backward twice on one graph must give the same Jacobian (within nondet_tol)."""
    name = "reentrant"
    try:
        outputs = call_apply(fn.apply, args, clone=True)
        out_idx = [i for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and o.requires_grad]
        first, _ = analytical_jacobian(outputs, out_idx, leaves, in_indices)
        second, _ = analytical_jacobian(outputs, out_idx, leaves, in_indices)
    except Exception as exc:
        return ExtraCheck(
            name, FAILED, f"a second backward through the same graph raised {type(exc).__name__}: {exc}"
        )
    worst = max((float(np.max(np.abs(first[k] - second[k]), initial=0.0)) for k in first), default=0.0)
    if not worst <= nondet_tol:
        return ExtraCheck(
            name,
            FAILED,
            f"two backward passes differ by up to {worst:.3g} (nondet_tol={nondet_tol:g}): the backward is not "
            "reentrant (non-deterministic, or it changes state saved on ctx).",
        )
    return ExtraCheck(name, PASSED, f"two backward passes agree (max difference {worst:.3g}).")


def check_output_grads(fn, args, leaves, *, undefined: bool) -> ExtraCheck:
    """Undefined (or zero) gradients for every output must give undefined or zero input gradients."""
    name = "undefined_output_grads" if undefined else "zero_output_grads"
    what = "undefined" if undefined else "zero"
    try:
        outputs = _differentiable_outputs(fn, args)
        if not outputs:
            return ExtraCheck(name, PASSED, "no differentiable output.")
        if undefined:
            outputs = [torch._C._functions.UndefinedGrad()(o) for o in outputs]
        grads = torch.autograd.grad(
            outputs, leaves, [torch.zeros_like(o) for o in outputs], allow_unused=True
        )
    except Exception as exc:
        return ExtraCheck(
            name, FAILED, f"backward raised {type(exc).__name__} when every output gradient was {what}: {exc}"
        )
    nonzero = [k for k, g in enumerate(grads) if g is not None and not bool(g.eq(0).all())]
    if nonzero:
        return ExtraCheck(
            name,
            FAILED,
            f"with {what} output gradients, backward returned non-zero gradients for inputs {nonzero}.",
        )
    return ExtraCheck(name, PASSED, f"{what} output gradients give zero (or no) input gradients.")


def check_double_backward(fn, args, *, eps: float, atol: float, rtol: float) -> ExtraCheck:
    """gradgradcheck, unless the backward is declared @once_differentiable."""
    name = "double_backward"
    if is_once_differentiable(fn):
        return ExtraCheck(name, DECLARED, "backward is decorated with @once_differentiable.")

    def apply(*a):
        return call_apply(fn.apply, a, clone=True)

    try:
        ok = torch.autograd.gradgradcheck(apply, args, eps=eps, atol=atol, rtol=rtol, raise_exception=True)
    except Exception as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "once_differentiable" in str(exc):
            return ExtraCheck(name, DECLARED, message)
        return ExtraCheck(
            name,
            FAILED,
            f"gradgradcheck: {message} If double backward is not meant to work, decorate backward with "
            "@once_differentiable to declare it.",
        )
    return ExtraCheck(
        name, PASSED if ok else FAILED, "gradgradcheck passed." if ok else "gradgradcheck failed."
    )
