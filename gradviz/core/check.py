"""One gradient check from start to end: inputs, forward, both Jacobians, the verdict.

This is what the CLI prints and the app draws. It mirrors
``torch.autograd.gradcheck(..., check_undefined_grad=False, check_batched_grad=False)`` but
keeps every cell, so a failure can be shown instead of summarised.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from gradviz.core.compare import BlockComparison, compare_block
from gradviz.core.extra_checks import ExtraCheck, run_extra_checks
from gradviz.core.hints import diagnose
from gradviz.core.inputs import PreparedInputs, prepare_inputs, resolve_device, resolve_dtype
from gradviz.core.jacobian import (
    CancelFn,
    Progress,
    ProgressFn,
    analytical_jacobian,
    call_apply,
    numerical_jacobian,
)
from gradviz.core.loader import LoadedSource, argument_names, choose_function, method_line, required_arguments
from gradviz.schema.errors import (
    Cancelled,
    GradvizError,
    SizeLimitError,
    UserCodeError,
    from_exception,
)
from gradviz.schema.indices import cell_label
from gradviz.schema.settings import CheckSettings, default_memory_limit

FLOAT32_ADVICE = (
    "Inputs are float32: central differences with eps={eps:g} keep only a few correct digits, so "
    "cells may fail even for a correct backward. gradcheck's advice: use float64 (--dtype float64)."
)


@dataclass
class TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...] | None  # None for a non-tensor argument or output
    dtype: str | None
    requires_grad: bool = False  # inputs: Jacobian columns computed; outputs: differentiable


@dataclass
class CheckResult:
    function: str
    device: str
    dtype: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    blocks: list[BlockComparison]
    settings: CheckSettings
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    extra_checks: list[ExtraCheck] = field(default_factory=list)
    analytic_path: str = "batched"  # "batched" (one vmapped backward per chunk) or "loop"
    numerical_path: str = "batched"

    @property
    def passed(self) -> bool:
        return all(b.passed for b in self.blocks) and not any(c.failed for c in self.extra_checks)

    def block(self, output: int, input: int) -> BlockComparison:
        return next(b for b in self.blocks if b.output == output and b.input == input)

    def cell_label(self, block: BlockComparison, row: int, col: int) -> str:
        """``out0[3,1] / weight[2,0]``: where a Jacobian cell comes from."""
        out_idx, in_idx = block.cell_index(row, col)
        return cell_label(block.output, out_idx, self.inputs[block.input].name, in_idx)


def check_source(
    loaded: LoadedSource,
    function: str | None = None,
    settings: CheckSettings | None = None,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> CheckResult:
    """Check one Function of loaded user source on the inputs its ``example_inputs`` gives."""
    settings = settings or CheckSettings()
    settings.validate()
    fn = choose_function(loaded, function)
    device, dtype = resolve_device(settings.device), resolve_dtype(settings.dtype)
    prepared = example_arguments(loaded, fn, device, dtype, settings.seed)
    return check_function(
        fn, prepared, settings, loaded=loaded, progress=progress, cancel=cancel, notes=list(loaded.notes)
    )


def example_arguments(
    loaded: LoadedSource, fn: type, device: torch.device, dtype: torch.dtype, seed: int
) -> PreparedInputs:
    """The arguments for ``fn.apply``: ``example_inputs`` (seeded), moved to device and dtype."""
    raw = _example_inputs(loaded, fn, device, dtype, seed)
    names = argument_names(fn, len(raw) if isinstance(raw, tuple | list) else 1)
    return prepare_inputs(raw, device, dtype, names, loaded.filename)


def _example_inputs(
    loaded: LoadedSource, fn: type, device: torch.device, dtype: torch.dtype, seed: int
) -> Any:
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        if loaded.example_inputs is None:
            names = required_arguments(fn)
            loaded.notes.append(
                f"No example_inputs() defined: using random 4×4 tensors for {', '.join(names) or 'no arguments'}. "
                "Define example_inputs(device, dtype) to choose the inputs."
            )
            return tuple(torch.randn(4, 4, device=device, dtype=dtype, requires_grad=True) for _ in names)
        try:
            return loaded.example_inputs(device, dtype)
        except (Exception, SystemExit) as exc:
            raise from_exception(
                "example_inputs", exc, loaded.filename, "example_inputs(device, dtype)"
            ) from None


def check_function(
    fn: type[torch.autograd.Function],
    inputs: PreparedInputs,
    settings: CheckSettings | None = None,
    *,
    loaded: LoadedSource | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    notes: list[str] | None = None,
) -> CheckResult:
    """Both Jacobians of ``fn.apply`` at ``inputs`` and their elementwise comparison."""
    settings = settings or CheckSettings()
    settings.validate()
    filename = (
        loaded.filename
        if loaded
        else getattr(fn.forward, "__code__", None) and fn.forward.__code__.co_filename
    )
    filename = filename or "<source>"
    args, in_indices = inputs.args, inputs.grad_indices
    leaves = [args[j] for j in in_indices]
    start = time.perf_counter()

    outputs, mutates, undeclared = _forward(fn, args, filename)
    out_infos = _output_infos(outputs, fn, filename, loaded)
    out_indices = [o.index for o in out_infos if o.requires_grad]
    # Like gradcheck: with no differentiable output, the numerical Jacobian must be all zero.
    zero_analytic = not out_indices
    if zero_analytic:
        out_indices = [
            o.index for o in out_infos if o.shape is not None and outputs[o.index].is_floating_point()
        ]
    _guard_size(outputs, out_indices, leaves, in_indices, inputs.names, settings)
    noise = _forward_noise(fn, args, outputs, out_indices)

    rows = sum(outputs[i].numel() for i in out_indices)
    cols = sum(x.numel() for x in leaves)
    tracker = Progress(rows * (not zero_analytic) + cols, progress, cancel)
    path = "none"
    if zero_analytic:
        analytic = {(i, j): None for i in out_indices for j in in_indices}
    else:
        analytic, path = _analytic(
            fn, outputs, out_indices, leaves, in_indices, settings, tracker, loaded, filename
        )
    t_analytic = time.perf_counter()
    numerical, numerical_path = _numerical(
        fn, args, out_indices, in_indices, settings, mutates, tracker, filename
    )
    t_numerical = time.perf_counter()

    tol = settings.tolerance()
    blocks = []
    for (i, j), n in numerical.items():
        a = analytic[i, j] if analytic[i, j] is not None else n * 0.0
        block = compare_block(i, j, tuple(outputs[i].shape), tuple(args[j].shape), a, n, tol)
        block.hints = diagnose(block, inputs.names[j])
        blocks.append(block)
    result = CheckResult(
        function=fn.__name__,
        device=str(args[in_indices[0]].device),
        dtype=str(args[in_indices[0]].dtype).removeprefix("torch."),
        inputs=_input_infos(inputs),
        outputs=out_infos,
        blocks=blocks,
        settings=settings,
        notes=(notes or []) + inputs.notes,
        analytic_path=path,
        numerical_path=numerical_path,
    )
    result.warnings = _warnings(result, leaves, settings, zero_analytic)
    result.warnings += _forward_warnings(fn, inputs.names, undeclared, noise, settings)
    if settings.all_checks:
        tracker.check_cancel()
        result.extra_checks = run_extra_checks(
            fn,
            args,
            in_indices,
            eps=settings.eps,
            atol=settings.atol,
            rtol=settings.rtol,
            nondet_tol=settings.nondet_tol,
        )
    end = time.perf_counter()
    result.seconds = {
        "analytic": t_analytic - start,
        "numerical": t_numerical - t_analytic,
        "total": end - start,
    }
    return result


def _forward(fn: type, args: tuple, filename: str) -> tuple[tuple, bool, list[int]]:
    """One forward with autograd on; also tells whether it modified an input in place, and
    which modified inputs it did not declare with ``ctx.mark_dirty``."""
    copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    versions = [a._version if isinstance(a, torch.Tensor) else None for a in copies]
    try:
        with torch.enable_grad():
            outputs = call_apply(fn.apply, copies, clone=False)
    except (Exception, SystemExit) as exc:
        raise from_exception("forward", exc, filename, f"{fn.__name__}.forward") from None
    changed = [j for j, (a, v) in enumerate(zip(copies, versions)) if isinstance(a, torch.Tensor) and a._version != v]
    # mark_dirty rebases a modified input onto the Function's own node; without it the input keeps its
    # old one. Only inputs that need gradients matter: a buffer (running statistics) may change quietly.
    nodes = {o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None}
    undeclared = [j for j in changed if nodes and copies[j].requires_grad and copies[j].grad_fn not in nodes]
    return outputs, bool(changed), undeclared


def _output_infos(
    outputs: tuple, fn: type, filename: str, loaded: LoadedSource | None = None
) -> list[TensorInfo]:
    infos = []
    for i, o in enumerate(outputs):
        if isinstance(o, torch.Tensor):
            infos.append(
                TensorInfo(i, f"out{i}", tuple(o.shape), str(o.dtype).removeprefix("torch."), o.requires_grad)
            )
        else:
            infos.append(TensorInfo(i, f"out{i}", None, None, False))
    if all(info.shape is None for info in infos):
        raise UserCodeError(
            "bad_output",
            f"{fn.__name__}.forward returned {type(outputs[0]).__name__ if outputs else 'nothing'}, "
            "not a tensor: forward must return a tensor or a tuple of tensors.",
            filename,
            method_line(loaded, fn, "forward", last_return=True) if loaded else None,
        )
    return infos


def _input_infos(inputs: PreparedInputs) -> list[TensorInfo]:
    infos = []
    for j, a in enumerate(inputs.args):
        if isinstance(a, torch.Tensor):
            dtype = str(a.dtype).removeprefix("torch.")
            infos.append(TensorInfo(j, inputs.names[j], tuple(a.shape), dtype, a.requires_grad))
        else:
            infos.append(TensorInfo(j, inputs.names[j], None, type(a).__name__, False))
    return infos


def _guard_size(outputs, out_indices, leaves, in_indices, names, settings: CheckSettings) -> None:
    """Refuse, before allocating, Jacobians that would not fit in the memory budget."""
    limit = settings.max_jacobian_bytes or default_memory_limit()
    rows = sum(outputs[i].numel() for i in out_indices)
    cols = sum(x.numel() for x in leaves)
    needed = 2 * rows * cols * 8 + 2 * settings.chunk_bytes
    if needed <= limit:
        return
    biggest = max(in_indices, key=lambda j: leaves[in_indices.index(j)].numel())
    raise SizeLimitError(
        f"The two Jacobians would take {_human_bytes(needed)} ({rows:,} output elements × {cols:,} input "
        f"elements × 8 bytes × 2), more than the limit of {_human_bytes(limit)}. Shrink the inputs in "
        f"example_inputs (the largest is {names[biggest]} with {leaves[in_indices.index(biggest)].numel():,} "
        "elements), mark inputs you do not need with requires_grad=False, or raise the limit (--max-memory-mb)."
    )


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TB"


_COUNT = re.compile(r"returned an incorrect number of gradients")
_SHAPE = re.compile(r"returned an invalid gradient at index (\d+)")


def _analytic(fn, outputs, out_indices, leaves, in_indices, settings, tracker, loaded, filename):
    try:
        return analytical_jacobian(
            outputs, out_indices, leaves, in_indices, chunk_bytes=settings.chunk_bytes, progress=tracker
        )
    except GradvizError:
        raise
    except (Exception, SystemExit) as exc:
        raise _backward_error(fn, exc, loaded, filename) from None


def _backward_error(
    fn: type, exc: BaseException, loaded: LoadedSource | None, filename: str
) -> UserCodeError:
    """Name the problem; engine-side checks point at backward's return statement."""
    error = from_exception("backward", exc, filename, f"{fn.__name__}.backward")
    text = str(exc)
    kind = "gradient_count" if _COUNT.search(text) else "gradient_shape" if _SHAPE.search(text) else None
    if kind is None:
        if error.lineno is None and loaded:  # e.g. a TypeError calling backward: point at its def
            error.lineno = method_line(loaded, fn, "backward")
        return error
    error.kind = kind
    line = method_line(loaded, fn, "backward", last_return=True) if loaded else None
    error.lineno = line or error.lineno
    if kind == "gradient_count":
        error.message = (
            f"{fn.__name__}.backward returned the wrong number of gradients: {text.split('(')[-1].rstrip(')')}. "
            "Return one value per forward argument (None for non-tensors)."
        )
    else:
        index = int(_SHAPE.search(text).group(1))
        detail = text.split(" - ", 1)[-1]
        error.message = f"{fn.__name__}.backward returned a bad gradient for input {index}: {detail}."
    return error


def _numerical(fn, args, out_indices, in_indices, settings, mutates, tracker, filename):
    """Numerical blocks and the path that ran."""
    try:
        return numerical_jacobian(
            fn.apply,
            args,
            out_indices,
            in_indices,
            eps=settings.eps,
            clone_inputs=mutates,
            chunk_bytes=settings.chunk_bytes,
            progress=tracker,
        )
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        context = f"{fn.__name__}.forward (on inputs perturbed by ±eps for finite differences)"
        raise from_exception("forward", exc, filename, context) from None


def _forward_noise(fn, args, outputs, out_indices) -> float:
    """Largest difference between the first forward and a second one on the same inputs.

    A forward that draws random numbers (or reads changing state) makes finite differences
    measure noise instead of slopes; one more forward is cheap next to the Jacobians.
    """
    try:
        with torch.inference_mode():
            again = call_apply(fn.apply, args, clone=True)
        worst = 0.0
        for i in out_indices:
            a, b = outputs[i].detach(), again[i]
            if not isinstance(b, torch.Tensor) or b.shape != a.shape or not a.is_floating_point():
                continue
            same = torch.isclose(a, b.to(a.dtype), rtol=0.0, atol=0.0, equal_nan=True)
            if not bool(same.all()):
                diff = torch.where(same, 0.0, (a - b).abs().nan_to_num(nan=float("inf")))
                worst = max(worst, float(diff.max()))
        return worst
    except (Exception, SystemExit):  # the numerical Jacobian runs forward again and says what fails
        return 0.0


def _forward_warnings(fn, names, undeclared, noise: float, settings: CheckSettings) -> list[str]:
    warnings = []
    for j in undeclared:
        warnings.append(
            f"{fn.__name__}.forward modifies its input {names[j]} in place without ctx.mark_dirty({names[j]}): "
            f"autograd is not told, so gradients through earlier uses of {names[j]} would be wrong. "
            f"Call ctx.mark_dirty({names[j]}) and return it, or work on a copy ({names[j]} = {names[j]}.clone())."
        )
    jacobian_noise = noise / (2 * settings.eps)
    if noise > 0 and jacobian_noise > 0.1 * settings.atol:
        warnings.append(
            f"forward is not deterministic: finite differences are noise. Two forwards on the same inputs "
            f"differ by up to {noise:.3g}, which is up to {jacobian_noise:.3g} in the numerical Jacobian "
            f"(eps={settings.eps:g}). Fix the seed or remove the randomness before trusting this check."
        )
    return warnings


def _warnings(result: CheckResult, leaves, settings: CheckSettings, zero_analytic: bool) -> list[str]:
    warnings = []
    if any(x.dtype != torch.float64 for x in leaves):
        warnings.append(FLOAT32_ADVICE.format(eps=settings.eps))
    for b in result.blocks:
        if b.n_nonfinite:
            warnings.append(
                f"Block out{b.output} / {result.inputs[b.input].name}: {b.n_nonfinite} cell(s) are NaN or Inf "
                "in the analytic or numerical Jacobian; they count as failing."
            )
    if zero_analytic:
        warnings.append(
            "No output is differentiable, so the numerical Jacobian must be zero (as gradcheck requires)."
        )
    return warnings
