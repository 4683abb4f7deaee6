"""gradcheck's checks besides the Jacobian comparison, each reported on its own.

By default ``torch.autograd.gradcheck`` also fails a backward that is not reentrant (two passes
through the same graph differ), one that is not multiplied by grad_output (zero output
gradients must give zero input gradients) and one that mishandles undefined output gradients.
gradviz runs the same checks by default, so its verdict is gradcheck's; ``--all-checks`` adds
double backward (``gradgradcheck``). gradcheck's opt-in checks run under their own names: ``fast_mode``
(gradcheck's verdict from random projections, which then replaces the cell-by-cell one) and
``batched_grad`` (gradcheck's own batched-gradient test). A backward decorated ``@once_differentiable`` has declared
it has no double backward, which is reported as such rather than as a failure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from gradviz.core import vmap_rule
from gradviz.core.callables import Checkable
from gradviz.core.check_run import CheckRun
from gradviz.core.function_info import is_once_differentiable
from gradviz.core.jacobian import Jacobian, Progress, call_apply
from gradviz.core.opcheck_checks import opcheck_outcomes
from gradviz.core.quiet_warnings import warnings_ignored
from gradviz.core.vjp import vjp
from gradviz.schema.errors import Cancelled
from gradviz.schema.indices import cell_label
from gradviz.schema.results import DECLARED, FAILED, FAST_MODE, PASSED, CheckOutcome
from gradviz.schema.settings import CheckSettings

REENTRANT = "reentrant"
GRAD_OUTPUT = "multiplied_by_grad_output"
UNDEFINED = "undefined_output_grads"
DOUBLE_BACKWARD = "double_backward"
BATCHED_GRAD = "batched_grad"
__all__ = ["BATCHED_GRAD", "DOUBLE_BACKWARD", "FAST_MODE", "GRAD_OUTPUT", "REENTRANT", "UNDEFINED"]


class ReentrancyMeter:
    """Compares a second pass of analytic rows, chunk by chunk, with the first pass.

    Used as ``analytical_jacobian(..., visit=meter)``: nothing of the second pass is stored, so
    the check costs one more pass of backward calls but no second Jacobian of memory.
    """

    def __init__(self, first: Jacobian, in_indices: Sequence[int]) -> None:
        self.first, self.in_indices = first, list(in_indices)
        self.worst = 0.0
        self.where: tuple[int, int, int, int] | None = None  # output, input, row, column
        self.values: tuple[float, float] = (0.0, 0.0)

    def __call__(self, i: int, r0: int, r1: int, rows: list[np.ndarray]) -> None:
        for j, b in zip(self.in_indices, rows):
            a = self.first.blocks[i, j][r0:r1]
            if not a.size or torch.equal(torch.from_numpy(a), torch.from_numpy(b)):
                continue  # a deterministic backward: bit for bit the same (the common case)
            same = (a == b) | (np.isnan(a) & np.isnan(b))  # equal infinities, NaN in both: no difference
            with np.errstate(invalid="ignore"):
                diff = np.nan_to_num(np.where(same, 0.0, np.abs(a - b)), nan=np.inf)
            flat = int(np.argmax(diff))
            if diff.flat[flat] > self.worst:
                r, c = np.unravel_index(flat, a.shape)
                self.worst = float(diff.flat[flat])
                self.where = (i, j, r0 + int(r), int(c))
                self.values = (float(a[r, c]), float(b[r, c]))

    def outcome(
        self,
        shapes: dict[tuple[int, int], tuple[tuple[int, ...], tuple[int, ...]]],
        names: Sequence[str],
        nondet_tol: float,
    ) -> CheckOutcome:
        """gradcheck's rule: fail when two passes differ by more than ``nondet_tol`` anywhere."""
        if self.where is None or not self.worst > nondet_tol:
            return CheckOutcome(REENTRANT, PASSED, f"two backward passes agree (max difference {self.worst:.3g}).")
        i, j, r, c = self.where
        out_shape, in_shape = shapes[i, j]
        out_idx = tuple(int(v) for v in np.unravel_index(r, out_shape)) if out_shape else ()
        in_idx = tuple(int(v) for v in np.unravel_index(c, in_shape)) if in_shape else ()
        first, second = self.values
        return CheckOutcome(
            REENTRANT,
            FAILED,
            f"backward is not reentrant: two passes through the same graph differ by up to {self.worst:.3g} "
            f"at {cell_label(i, out_idx, names[j], in_idx)} (first {first:.6g}, then {second:.6g}; "
            f"nondet_tol={nondet_tol:g}). A random or stateful backward (one that changes what it saved on "
            "ctx) does this.",
        )


def check_multiplied_by_grad_output(
    outputs: Sequence[torch.Tensor], leaves: Sequence[torch.Tensor], names: Sequence[str]
) -> CheckOutcome:
    """Zero grad_output for every output must give zero (or no) input gradients."""
    try:
        grads = vjp(outputs, leaves, [torch.zeros_like(o) for o in outputs])
    except Exception as exc:
        return CheckOutcome(
            GRAD_OUTPUT, FAILED, f"backward raised {type(exc).__name__} with zero output gradients: {exc}"
        )
    for g, leaf, name in zip(grads, leaves, names):
        if g is not None and g.layout != leaf.layout:
            layout = str(g.layout).removeprefix("torch.")
            return CheckOutcome(
                GRAD_OUTPUT,
                FAILED,
                f"backward returned a {layout} gradient for {name}, a {str(leaf.layout).removeprefix('torch.')} "
                "input: the gradient of an input must have its layout (gradcheck: 'grad is incorrect layout').",
            )
    problem = _nonzero_gradient(grads, names)
    if problem:
        return CheckOutcome(
            GRAD_OUTPUT,
            FAILED,
            f"backward is not multiplied by grad_output: with grad_output = 0 for every output it returned "
            f"{problem}. Every gradient a backward returns must scale with grad_output.",
        )
    return CheckOutcome(GRAD_OUTPUT, PASSED, "zero output gradients give zero input gradients.")


def check_undefined_output_grads(
    fn: Checkable,
    args: Sequence,
    leaves_at: Sequence[int],
    names: Sequence[str],
    *,
    count: int | None = None,
) -> CheckOutcome:
    """Undefined gradients for all outputs (and for each one alone) must give zero or no gradients.

    As gradcheck does it: a fresh forward per case, ``UndefinedGrad`` on the outputs concerned,
    zeros for the others. ``count``: the differentiable outputs, where a forward already said.
    """
    if count is None:
        count = len(_forward_for_grads(fn, args, leaves_at)[0])
    cases: list[tuple[str, set[int]]] = [("every output", set(range(count)))]
    if count > 1:
        cases += [(f"output {k} alone", {k}) for k in range(count)]
    for label, undefined in cases:
        outputs, leaves = _forward_for_grads(fn, args, leaves_at)
        wrapped = [torch._C._functions.UndefinedGrad()(o) if k in undefined else o for k, o in enumerate(outputs)]
        try:
            grads = vjp(wrapped, leaves, [torch.zeros_like(o) for o in wrapped])
        except Exception as exc:
            return CheckOutcome(
                UNDEFINED,
                FAILED,
                f"backward raised {type(exc).__name__} when the gradient of {label} was undefined (None): {exc}. "
                "With ctx.set_materialize_grads(False) a backward must handle None grad_outputs.",
            )
        problem = _nonzero_gradient(grads, names)
        if problem:
            return CheckOutcome(
                UNDEFINED,
                FAILED,
                f"with the gradient of {label} undefined (None), backward returned {problem}; "
                "it must return zero or None there.",
            )
    return CheckOutcome(UNDEFINED, PASSED, "undefined output gradients give zero or no input gradients.")


def _forward_for_grads(fn, args: Sequence, leaves_at: Sequence[int]) -> tuple[list[torch.Tensor], list]:
    """A fresh graph: the differentiable outputs of a forward on copies, and the copies to differentiate."""
    call = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    leaves = [call[j] for j in leaves_at]
    with torch.enable_grad():
        outputs = call_apply(fn.apply, call, clone=False)
    return [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad], leaves


def _nonzero_gradient(grads: Sequence[torch.Tensor | None], names: Sequence[str]) -> str | None:
    """'a non-zero gradient for x (largest |value| 2 at x[1,0])', or None when all are zero."""
    for g, name in zip(grads, names):
        if g is None:
            continue
        dense = g.to_dense() if g.layout != torch.strided else g
        if bool(dense.eq(0).all()):
            continue
        magnitude = dense.detach().abs().nan_to_num(nan=float("inf"))
        flat = int(magnitude.argmax())
        index = tuple(int(v) for v in np.unravel_index(flat, tuple(dense.shape))) if dense.dim() else ()
        value = float(dense.reshape(-1)[flat])
        where = f"{name}[{','.join(str(v) for v in index)}]"
        return f"a non-zero gradient for {name} (largest {value:.6g} at {where})"
    return None


def check_double_backward(fn, args, *, eps: float, atol: float, rtol: float) -> CheckOutcome:
    """gradgradcheck, unless the backward is declared @once_differentiable."""
    if is_once_differentiable(fn):
        return CheckOutcome(DOUBLE_BACKWARD, DECLARED, "backward is decorated with @once_differentiable.")

    def apply(*a):
        return call_apply(fn.apply, a, clone=True)

    try:
        ok = torch.autograd.gradgradcheck(apply, args, eps=eps, atol=atol, rtol=rtol, raise_exception=True)
    except Exception as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "once_differentiable" in str(exc):
            return CheckOutcome(DOUBLE_BACKWARD, DECLARED, message)
        return CheckOutcome(
            DOUBLE_BACKWARD,
            FAILED,
            f"gradgradcheck: {message} If double backward is not meant to work, decorate backward with "
            "@once_differentiable to declare it.",
        )
    return CheckOutcome(
        DOUBLE_BACKWARD,
        PASSED if ok else FAILED,
        "gradgradcheck passed." if ok else "gradgradcheck failed.",
    )


def check_fast_mode(
    fn, args: Sequence, settings: CheckSettings, *, holds_jacobians: bool = True, clone: bool = True
) -> CheckOutcome:
    """``torch.autograd.gradcheck(fast_mode=True)`` itself: it compares v^T J u for random u, v (atol
    scaled by sum|u|·sum|v|), so it may pass where a cell fails by a little, or the other way round.

    Its undefined-gradient and batched forward tests are left out: gradviz runs them by name
    (so ``check_undefined_grad=False`` drops them, as in gradcheck). ``holds_jacobians``: the
    full Jacobians are computed beside it. Without (``core/verdict_first.py``) the check is named
    fast_mode only when asked for by name (its verdict is then the check's), else one check
    among the searched cells of Jacobians too large to hold. ``clone``: every call on copies (a
    forward that modifies its inputs must not change the caller's)."""

    def apply(*a):
        return call_apply(fn.apply, a, clone=clone)

    name = FAST_MODE if holds_jacobians or settings.fast_mode else "fast_projection"
    try:
        with warnings_ignored():
            torch.autograd.gradcheck(
                apply, tuple(args), eps=settings.eps, atol=settings.atol, rtol=settings.rtol,
                nondet_tol=settings.nondet_tol, fast_mode=True, masked=settings.masked,
                check_undefined_grad=False, check_forward_ad=settings.check_forward_ad,
                check_backward_ad=settings.check_backward_ad,
            )  # fmt: skip
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if not holds_jacobians:
            return CheckOutcome(name, FAILED, f"gradcheck(fast_mode=True) failed: {first}")
        return CheckOutcome(
            name, FAILED, f"gradcheck(fast_mode=True) fails: {first} The cells shown are the full Jacobians."
        )
    if not holds_jacobians:
        return CheckOutcome(name, PASSED, "gradcheck(fast_mode=True) passed on random projections.")
    return CheckOutcome(
        name,
        PASSED,
        "gradcheck(fast_mode=True) passes on random projections v^T J u; this is the verdict, whatever the cells "
        "of the full Jacobians shown say.",
    )


def fast_mode_warnings(found: Sequence[CheckOutcome], n_failing: int) -> list[str]:
    """Where the cells shown and gradcheck's fast verdict disagree, say which one is the verdict."""
    fast = next((c for c in found if c.name == FAST_MODE), None)
    if fast is None or not n_failing or fast.failed:
        return []
    return [
        f"{n_failing:,} cell(s) of the full Jacobians fail the element-wise comparison, but gradcheck(fast_mode=True) "
        "passes: its random projections v^T J u allow atol scaled by sum|u|·sum|v|. The verdict is fast mode's; "
        "run without fast_mode for the element-wise one."
    ]


def check_batched_grad(args: Sequence, outputs: Sequence[torch.Tensor], out_indices: Sequence[int]) -> CheckOutcome:
    """gradcheck's ``check_batched_grad``, by PyTorch's own test: backward under the prototype
    ``torch._vmap_internals.vmap`` must equal two plain backward calls. That vmap never calls a
    Function's ``vmap`` staticmethod or ``generate_vmap_rule``: a NumPy backward fails it, a wrong
    vmap rule passes it."""
    from torch.autograd.gradcheck import GradcheckError, _test_batched_grad

    try:
        for i in out_indices:
            _test_batched_grad(tuple(args), outputs[i], i)
    except GradcheckError as exc:
        first = str(exc).strip().splitlines()[0]
        return CheckOutcome(BATCHED_GRAD, FAILED, f"gradcheck's batched-gradient test fails: {first}")
    return CheckOutcome(
        BATCHED_GRAD, PASSED, "backward under gradcheck's prototype vmap equals plain backward calls."
    )


def second_pass(run: CheckRun, first: Jacobian, tracker: Progress) -> ReentrancyMeter | Exception:
    """The analytic rows again through the same graph, compared on the fly with the first pass.

    Returns the ReentrancyMeter, or the exception the second pass raised: that is the check's
    finding (gradcheck raises there too), not an error of the run.
    """
    meter = ReentrancyMeter(first, run.in_indices)
    try:
        run.analytic_rows(tracker, batched=first.path == "batched", visit=meter)
    except Cancelled:
        raise
    except Exception as exc:
        return exc
    return meter


def other_checks(run: CheckRun, second: ReentrancyMeter | Exception | None) -> list[CheckOutcome]:
    """gradcheck's default checks after the Jacobian (unless jacobian_only), then double backward.

    ``second``: what ``second_pass`` gave (None under jacobian_only)."""
    fn, args, outputs, settings = run.fn, run.args, run.outputs, run.settings
    out_indices, in_indices, names = run.out_indices, run.in_indices, run.names
    found = []
    leaf_names = [names[j] for j in in_indices]
    if settings.fast_mode:
        found.append(check_fast_mode(fn, args, settings, clone=run.mutates))
    found += vmap_rule_outcomes(run)
    if not settings.check_backward_ad:  # gradcheck's other checks rely on backward mode
        return found
    if settings.check_batched_grad:
        found.append(check_batched_grad(args, outputs, out_indices))
    if not settings.jacobian_only:
        shapes = {(i, j): (tuple(outputs[i].shape), tuple(args[j].shape)) for i in out_indices for j in in_indices}
        if isinstance(second, Exception):
            found.append(
                CheckOutcome(
                    REENTRANT,
                    FAILED,
                    f"a second backward through the same graph raised {type(second).__name__}: {second}",
                )
            )
        elif second is not None:
            found.append(second.outcome(shapes, names, settings.nondet_tol))
        differentiable = [outputs[i] for i in out_indices]
        found.append(check_multiplied_by_grad_output(differentiable, run.leaves, leaf_names))
        found.append(check_undefined_output_grads(fn, args, in_indices, leaf_names))
        found += opcheck_outcomes(fn, args, counts=settings.opcheck == "fail")  # a custom op's registration: none for a Function
    if settings.all_checks:
        found.append(check_double_backward(fn, args, eps=settings.eps, atol=settings.atol, rtol=settings.rtol))
    return found


def vmap_rule_outcomes(run: CheckRun) -> list[CheckOutcome]:
    """Beyond gradcheck, never the verdict: the Function's own vmap rule against plain calls
    (by default only where it declares one)."""
    settings = run.settings
    if not (settings.check_vmap_rule or (settings.check_vmap_rule is None and vmap_rule.vmap_rule_of(run.fn))):
        return []
    return [
        vmap_rule.check_vmap_rule(
            run.fn, run.args, run.in_indices, run.out_indices, run.names, atol=settings.atol, rtol=settings.rtol,
            seed=settings.seed,
        )
    ]
