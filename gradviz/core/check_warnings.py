"""The warnings and notes a check adds to its verdict: they explain it, never change it.

Low precision (gradcheck's "use float64" advice; an output coarser than the inputs), NaN and all-zero blocks, a forward that
modifies its input or draws random numbers, and Functions gradcheck itself would refuse.
"""

from __future__ import annotations

import math

import torch

from gradviz.core.diagnosis import coarser_outputs, is_nondeterministic
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import DTYPE_DEFAULTS, MACHINE_EPS, CheckSettings

FLOAT32_ADVICE = (
    "Inputs are {dtype}: central differences with eps={eps:g} keep only a few correct digits, so "
    "cells may fail even for a correct backward. gradcheck's advice: use float64{own}."
)
DTYPE_DEFAULTS_NOTE = (
    "Inputs are {dtype}, checked with {dtype}'s defaults (eps={eps:g}, atol={atol:g}, rtol={rtol:g}): a pass "
    "means agreement to a few digits; float64 checks far more closely."
)


OUTPUT_DTYPE = (
    "{outputs} {verb} {low} while the inputs are {dtype}: forward returns {low}, so its finite differences and "
    "the gradients through it keep only {low}'s precision (about {digits} significant digits) and cells may fail "
    "for a right backward. Return {dtype} from forward (drop the cast to {low}), or check in {low} "
    "with {low}'s own defaults (eps={eps:g}, atol={atol:g}, rtol={rtol:g}; --dtype {low}, or {low} inputs)."
)


ALL_ZERO = (
    "{blocks}: both Jacobians are all zero: the output does not depend on this input through what gradviz "
    "perturbs, so the block passes without checking the backward. If the Function reads the input another "
    "way too (a module's weight read through the module), pass that very tensor, not a copy."
)


def in_place_note(changed: list[int], in_indices: list[int], names: list[str]) -> list[str]:
    """gradcheck calls forward on its own input again and again: one modified in place moves under
    its finite differences, so gradcheck reports a mismatch whatever the backward does."""
    moved = [names[j] for j in changed if j in in_indices]
    if not moved:
        return []
    return [
        f"forward modifies {', '.join(moved)} in place: gradviz gives every call a fresh copy. "
        "torch.autograd.gradcheck reuses its input, which then changes under its finite differences, "
        "so it reports a mismatch here even for a right backward; this verdict is the one it would give "
        "on fn(x.clone())."
    ]


def forward_noise(outputs, again: tuple | None, out_indices) -> float:
    """Largest difference between the first forward and a second one on the same inputs.

    A forward that draws random numbers (or reads changing state) makes finite differences
    measure noise instead of slopes; one more forward is cheap next to the Jacobians.
    """
    if again is None:
        return 0.0
    try:
        worst = 0.0
        for i in out_indices:
            a, b = outputs[i].detach(), again[i].detach() if isinstance(again[i], torch.Tensor) else again[i]
            if not isinstance(b, torch.Tensor) or b.shape != a.shape or not a.is_floating_point():
                continue
            same = torch.isclose(a, b.to(a.dtype), rtol=0.0, atol=0.0, equal_nan=True)
            if not bool(same.all()):
                diff = torch.where(same, 0.0, (a - b).abs().nan_to_num(nan=float("inf")))
                worst = max(worst, float(diff.max()))
        return worst
    except (Exception, SystemExit):
        return 0.0


def beyond_gradcheck(outputs: tuple) -> list[str]:
    """Outputs torch.autograd.gradcheck itself cannot take (it raises), though gradviz can."""
    found = []
    if any(not isinstance(o, torch.Tensor) for o in outputs):
        found.append("an output that is not a tensor")
    if any(isinstance(o, torch.Tensor) and o.dtype == torch.bool for o in outputs):
        found.append("a bool output")
    floats = [k for k, o in enumerate(outputs) if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex())]
    others = [k for k, o in enumerate(outputs) if isinstance(o, torch.Tensor) and k not in floats]
    if floats and others and min(others) < max(floats):
        found.append("an integer output before a floating-point one")
    if not found:
        return []
    return [
        f"torch.autograd.gradcheck raises on this Function ({' and '.join(found)}), so it gives no verdict "
        "here; gradviz compared the floating-point outputs as gradcheck does for the others."
    ]


def forward_warnings(fn, names, undeclared, noise: float, settings: CheckSettings) -> list[str]:
    warnings = []
    for j in undeclared:
        warnings.append(
            f"{fn.__name__}.forward modifies its input {names[j]} in place without ctx.mark_dirty({names[j]}): "
            f"autograd is not told, so gradients through earlier uses of {names[j]} would be wrong. "
            f"Call ctx.mark_dirty({names[j]}) and return it, or work on a copy ({names[j]} = {names[j]}.clone())."
        )
    jacobian_noise = noise / (2 * settings.eps)
    if is_nondeterministic(noise, settings):
        warnings.append(
            f"forward is not deterministic: finite differences are noise. Two forwards on the same inputs "
            f"differ by up to {noise:.3g}, which is up to {jacobian_noise:.3g} in the numerical Jacobian "
            f"(eps={settings.eps:g}). Fix the seed or remove the randomness before trusting this check."
        )
    return warnings


def output_dtype_warning(result: CheckResult) -> list[str]:
    """Name outputs of a coarser dtype than the inputs: their round-off, not the backward, can fail cells."""
    coarse = coarser_outputs(result)
    if not coarse:
        return []
    low = max(coarse.values(), key=lambda d: MACHINE_EPS[d])
    own = DTYPE_DEFAULTS[low]
    names = [f"out{i}" for i in coarse]
    return [
        OUTPUT_DTYPE.format(
            outputs=", ".join(names), verb="is" if len(names) == 1 else "are", low=low, dtype=result.dtype,
            digits=round(-math.log10(MACHINE_EPS[low])), eps=own.eps, atol=own.atol, rtol=own.rtol,
        )
    ]  # fmt: skip


def result_warnings(result: CheckResult, leaves, settings: CheckSettings, zero_analytic: bool, empty: list[str]) -> list[str]:
    warnings = []
    low = sorted({str(x.dtype).removeprefix("torch.") for x in leaves if x.dtype != torch.float64})
    if low and len(low) == 1 and settings.dtype == low[0] and settings.uses_dtype_defaults():
        warnings.append(DTYPE_DEFAULTS_NOTE.format(dtype=low[0], eps=settings.eps, atol=settings.atol, rtol=settings.rtol))
    elif low:
        own = DTYPE_DEFAULTS.get(low[0]) if len(low) == 1 else None
        suffix = f", or {low[0]}'s own defaults (eps={own.eps:g}, atol={own.atol:g}, rtol={own.rtol:g})" if own else ""
        warnings.append(FLOAT32_ADVICE.format(dtype=" and ".join(low), eps=settings.eps, own=suffix))
    warnings += output_dtype_warning(result)
    for b in result.blocks:
        if b.n_nonfinite:
            warnings.append(
                f"Block out{b.output} / {result.inputs[b.input].name}: {b.n_nonfinite} cell(s) are NaN or Inf "
                "in the analytic or numerical Jacobian; they fail unless both are the same infinity."
            )
    if empty:
        warnings.append(f"Nothing to check in {', '.join(empty)}: 0 elements.")
    zero = [f"out{b.output} / {result.inputs[b.input].name}" for b in result.blocks if b.all_zero]
    if zero and not zero_analytic:
        warnings.append(ALL_ZERO.format(blocks=", ".join(zero)))
    if zero_analytic:
        warnings.append(
            "No output is differentiable, so the numerical Jacobian must be exactly zero (as gradcheck requires)."
        )
    return warnings
