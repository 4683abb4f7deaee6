"""Re-check a failing float32 / float16 / bfloat16 check on a float64 copy of the same inputs.

The copy has the same values (each low-precision number is exactly representable in float64),
so the only change is the arithmetic: what still fails in float64 under gradcheck's defaults
is the backward's fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

import torch

from gradviz.core.inputs import PreparedInputs
from gradviz.schema.errors import Cancelled, GradvizError
from gradviz.schema.precision import PrecisionCheck
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import CheckSettings, dtype_defaults

Check = Callable[..., CheckResult]


def recheck_in_float64(
    fn: type, inputs: PreparedInputs, settings: CheckSettings, result: CheckResult, check: Check, **kwargs: Any
) -> PrecisionCheck | None:
    """The float64 verdict for a check that failed in a lower precision; None when not wanted.

    ``check`` is ``check_function`` (passed in, so this module does not import the one that calls it).
    """
    return recheck_in_float64_blocks(fn, inputs, settings, result, check, **kwargs)[0]


def recheck_in_float64_blocks(
    fn: type, inputs: PreparedInputs, settings: CheckSettings, result: CheckResult, check: Check, **kwargs: Any
) -> tuple[PrecisionCheck | None, CheckResult | None]:
    """``recheck_in_float64``'s verdict and the float64 copy's own result (its blocks, one per
    block of ``result``: which of them pass there), or None where it did not run."""
    leaves = [inputs.args[j] for j in inputs.grad_indices]
    low = sorted({str(x.dtype).removeprefix("torch.") for x in leaves if x.dtype != torch.float64})
    n_failing = sum(b.n_failing for b in result.blocks)
    if not low or not n_failing:
        return None, None
    reference = dtype_defaults("float64")
    settings64 = replace(
        settings, dtype="float64", **asdict(reference), jacobian_only=True, all_checks=False, explain=False, jitter=0.0
    )
    copy = PreparedInputs(tuple(as_float64(a) for a in inputs.args), inputs.names, [])
    found = PrecisionCheck(
        dtype=" and ".join(low),
        n_failing=n_failing,
        n_cells=result.n_cells,
        float64_failing=None,
        float64_cells=0,
        eps=reference.eps,
        atol=reference.atol,
        rtol=reference.rtol,
    )
    try:
        checked = check(fn, copy, settings64, **kwargs)
    except Cancelled:
        raise
    except GradvizError as exc:
        found.error = exc.message
        return found, None
    found.float64_failing = sum(b.n_failing for b in checked.blocks)
    found.float64_cells = checked.n_cells
    return found, checked


def recheck_at_forward_precision(
    fn: type, inputs: PreparedInputs, settings: CheckSettings, internal: str, check: Check, **kwargs: Any
) -> CheckResult | None:
    """The same check with ``internal``'s eps, atol and rtol, on the same inputs; None if it raises.

    For a forward that rounds like ``internal`` (float32 inside a float64 Function): its round-off
    swamps gradcheck's eps=1e-6, but not ``internal``'s own step, so what fails there is the backward.
    """
    coarse = replace(
        settings, **asdict(dtype_defaults(internal)), jacobian_only=True, all_checks=False, explain=False, jitter=0.0
    )
    try:
        return check(fn, inputs, coarse, **kwargs)
    except Cancelled:
        raise
    except GradvizError:
        return None


def as_float64(value: Any) -> Any:
    """A float64 copy of every floating tensor in ``value`` (strides and requires_grad kept)."""
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point() or value.layout != torch.strided:
            return value
        copy = value.detach().to(dtype=torch.float64, copy=True)
        return copy.requires_grad_(value.requires_grad)
    if isinstance(value, list | tuple):
        items = [as_float64(v) for v in value]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if isinstance(value, dict):
        return {k: as_float64(v) for k, v in value.items()}
    return value
