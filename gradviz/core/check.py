"""One gradient check from start to end: inputs, forward, both Jacobians, the verdict.

This is what the CLI prints and the app draws. The verdict is
``torch.autograd.gradcheck(...)``'s with its defaults: the Jacobian comparison plus the checks
gradcheck also runs by default (reentrancy, backward multiplied by grad_output, undefined
output gradients), in gradcheck's order; every cell is kept, so a failure can be shown instead of
summarised. ``jacobian_only`` drops the other checks; ``all_checks`` adds double backward.
"""

from __future__ import annotations

import dataclasses
import re
import time
import warnings
from typing import Any

import torch

from gradviz.core import checks, forward_jacobian, large, vmap_rule
from gradviz.core.callables import Checkable, CustomOpFunction
from gradviz.core.compare import compare_block
from gradviz.core.complex_view import (
    RealView,
    conjugate_hints,
    output_note,
    outputs_need_real_view,
    real_view,
)
from gradviz.core.diagnosis import explain_failures, is_nondeterministic
from gradviz.core.function_info import reads_data_attribute, source_file
from gradviz.core.hints import diagnose, diagnose_across
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import (
    CancelFn,
    Jacobian,
    Progress,
    ProgressFn,
    analytical_jacobian,
    call_apply,
    numerical_jacobian,
)
from gradviz.core.loader import LoadedSource, method_line
from gradviz.core.opcheck_checks import opcheck_outcomes
from gradviz.core.prepare import prepare_source
from gradviz.schema.errors import (
    Cancelled,
    ErrorKind,
    GradvizError,
    UserCodeError,
    from_exception,
)
from gradviz.schema.results import BlockComparison, CheckOutcome, CheckResult, TensorInfo
from gradviz.schema.settings import DTYPE_DEFAULTS, CheckSettings, Tolerance, default_memory_limit
from gradviz.schema.units import format_bytes

FLOAT32_ADVICE = (
    "Inputs are {dtype}: central differences with eps={eps:g} keep only a few correct digits, so "
    "cells may fail even for a correct backward. gradcheck's advice: use float64{own}."
)
DTYPE_DEFAULTS_NOTE = (
    "Inputs are {dtype}, checked with {dtype}'s defaults (eps={eps:g}, atol={atol:g}, rtol={rtol:g}): a pass "
    "means agreement to a few digits; float64 checks far more closely."
)


ALL_ZERO = (
    "{blocks}: both Jacobians are all zero: the output does not depend on this input through what gradviz "
    "perturbs, so the block passes without checking the backward. If the Function reads the input another "
    "way too (a module's weight read through the module), pass that very tensor, not a copy."
)


class NothingToCheck(GradvizError):
    """Every Jacobian block has zero cells: there is no verdict to give."""

    kind = ErrorKind.NOTHING_TO_CHECK


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
    prepared = prepare_source(loaded, function, settings)
    fn, name = prepared.fn, prepared.name
    if isinstance(fn, CustomOpFunction):
        name = fn.__name__  # ns::name, however the op was named
    result = check_function(
        fn,
        prepared.inputs,
        settings,
        loaded=loaded,
        progress=progress,
        cancel=cancel,
        notes=list(loaded.notes),
        name=name,
    )
    result.functions = list(loaded.functions)
    return result


def check_function(
    fn: Checkable,
    inputs: PreparedInputs,
    settings: CheckSettings | None = None,
    *,
    loaded: LoadedSource | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    notes: list[str] | None = None,
    name: str | None = None,
) -> CheckResult:
    """Both Jacobians of ``fn.apply`` at ``inputs``, their comparison, and gradcheck's other checks.

    ``name`` is what the user calls the Function (a factory-made class may have another __name__).
    """
    settings = settings or CheckSettings()
    settings.validate()
    fn, inputs = real_view(fn, inputs)
    if isinstance(fn, RealView):
        settings = dataclasses.replace(settings, batched=False)  # view_as_complex is not vmapped everywhere
    if settings.batched and reads_data_attribute(fn, loaded.source if loaded else None):
        settings = dataclasses.replace(settings, batched=False)  # vmap + .data would crash the process
    code = _CodeFiles(fn, loaded)
    args, in_indices = inputs.args, inputs.grad_indices
    leaves = [args[j] for j in in_indices]
    start = time.perf_counter()

    outputs, mutates, undeclared, changed = _forward(fn, args, code)
    if outputs_need_real_view(outputs):  # complex outputs of real inputs: check them as real ones
        return check_function(
            RealView(fn, frozenset()), dataclasses.replace(inputs, notes=[*inputs.notes, output_note()]), settings,
            loaded=loaded, progress=progress, cancel=cancel, notes=notes, name=name,
        )
    out_infos = _output_infos(outputs, fn, code, loaded)
    out_indices = [o.index for o in out_infos if o.requires_grad]
    # Like gradcheck: with no differentiable output, the numerical Jacobian must be exactly zero.
    zero_analytic = not out_indices
    if zero_analytic:
        out_indices = [o.index for o in out_infos if o.shape is not None and outputs[o.index].is_floating_point()]
        if not out_indices:
            raise NothingToCheck(
                f"Nothing to check: {fn.__name__}.forward returns no floating-point tensor (only "
                f"{', '.join(sorted({o.dtype or 'non-tensor' for o in out_infos}))} outputs), so there is no "
                "Jacobian to compare."
            )
    empty = _empty_blocks(outputs, out_indices, args, in_indices, inputs.names)
    noise = _forward_noise(fn, args, outputs, out_indices)
    too_large = _too_large(outputs, out_indices, leaves, settings)
    if too_large and not zero_analytic:
        return _check_large(
            fn, inputs, outputs, out_infos, out_indices, settings, too_large, progress, cancel, name, mutates=mutates
        )

    rows = sum(outputs[i].numel() for i in out_indices)
    cols = sum(x.numel() for x in leaves)
    passes = 1 if zero_analytic or not settings.check_backward_ad else (2 if settings.jacobian_only else 3)
    forward_cols = cols if settings.check_forward_ad and not zero_analytic else 0  # one forward-AD call each
    tracker = Progress(rows * (passes - 1) + cols + forward_cols, progress, cancel)
    # gradcheck's order: numerical first, then the analytic rows twice through the same graph
    numerical = _numerical(fn, args, out_indices, in_indices, settings, mutates, tracker, code)
    t_numerical = time.perf_counter()
    analytic = second = None
    if not zero_analytic and settings.check_backward_ad:  # check_backward_ad=False: forward mode alone
        analytic = _analytic(fn, outputs, out_indices, leaves, in_indices, settings, tracker, loaded, code)
        if not settings.jacobian_only:
            second = _second_pass(fn, outputs, out_indices, leaves, in_indices, settings, analytic, tracker)
    t_analytic = time.perf_counter()

    backward = zero_analytic or settings.check_backward_ad
    blocks = _compare(numerical, analytic, outputs, args, inputs.names, settings, zero_analytic) if backward else []
    result = CheckResult(
        function=name or fn.__name__,
        device=str(leaves[0].device),
        dtype=str(leaves[0].dtype).removeprefix("torch."),
        inputs=_input_infos(inputs),
        outputs=out_infos,
        blocks=blocks,
        settings=settings,
        notes=(notes or []) + inputs.notes,
        analytic_path=analytic.path if analytic else "none",
        numerical_path=numerical.path,
    )
    if isinstance(fn, RealView):
        conjugate_hints(blocks, settings.atol, settings.rtol)
    result.warnings = _warnings(result, leaves, settings, zero_analytic, empty)
    result.warnings += [j.note for j in (numerical, analytic) if j is not None and j.note]
    result.warnings += _forward_warnings(fn, inputs.names, undeclared, noise, settings)
    result.notes += _beyond_gradcheck(outputs)
    result.notes += _in_place_note(changed, in_indices, inputs.names)
    forward = forward_jacobian.ForwardFindings()
    if settings.check_forward_ad and not zero_analytic:
        forward = forward_jacobian.check_forward_mode(
            fn, args, outputs, numerical, out_indices, in_indices, inputs.names, settings, clone_inputs=mutates,
            progress=tracker, backward_blocks=blocks,
        )  # fmt: skip
        result.forward_blocks, result.warnings = forward.blocks, result.warnings + forward.warnings
    if settings.explain and not zero_analytic:
        _explain(fn, inputs, settings, result, mutates, tracker, noise)
    if not zero_analytic:
        tracker.check_cancel()
        result.checks = _other_checks(fn, args, outputs, out_indices, in_indices, inputs.names, settings, second)
        result.checks += forward.checks
        result.warnings += checks.fast_mode_warnings(result.checks, result.n_failing)
    end = time.perf_counter()
    result.seconds = {
        "numerical": t_numerical - start,
        "analytic": t_analytic - t_numerical,
        "total": end - start,
    }
    return result


def _in_place_note(changed: list[int], in_indices: list[int], names: list[str]) -> list[str]:
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


def _explain(fn, inputs: PreparedInputs, settings: CheckSettings, result: CheckResult, mutates: bool, tracker, noise: float) -> None:
    """Why cells fail, never whether: one diagnosis per failing block (``core/diagnosis.py``) from
    the kink probe, the forward's measured round-off and a re-check where one helps."""
    if result.n_failing:
        explain_failures(
            fn, inputs, settings, result, check_function, clone_inputs=mutates, noise=noise,
            cancel=tracker.check_cancel, cancel_flag=tracker.cancel,
        )  # fmt: skip


class _CodeFiles:
    """The files whose frames count as the user's: the loaded source and the Function's own module."""

    def __init__(self, fn: Checkable, loaded: LoadedSource | None) -> None:
        own = source_file(fn)
        self.main = loaded.filename if loaded else own or "<source>"
        self.also = {own} if own else set()

    def error(self, kind: str, exc: BaseException, context: str) -> UserCodeError:
        return from_exception(kind, exc, self.main, context, also=self.also)


def _compare(
    numerical: Jacobian,
    analytic: Jacobian | None,
    outputs: tuple,
    args: tuple,
    names: list[str],
    settings: CheckSettings,
    zero_analytic: bool,
) -> list[BlockComparison]:
    """Every block compared as gradcheck compares it (zero tolerance where the Jacobian must be 0)."""
    tol = Tolerance(settings.eps, 0.0, 0.0) if zero_analytic else settings.tolerance()
    blocks = []
    for (i, j), n in numerical.blocks.items():
        a = analytic.blocks[i, j] if analytic else n * 0.0
        dtype = torch.promote_types(args[j].dtype, outputs[i].dtype)
        block = compare_block(
            i, j, tuple(outputs[i].shape), tuple(args[j].shape), a, n, tol, compute_dtype=dtype
        )
        block.hints = diagnose(block, names[j])
        blocks.append(block)
    diagnose_across(blocks, names)
    return blocks


def _second_pass(fn, outputs, out_indices, leaves, in_indices, settings, first: Jacobian, tracker) -> Any:
    """The analytic rows again through the same graph, compared on the fly with the first pass.

    Returns the ReentrancyMeter, or the exception the second pass raised: that is the check's
    finding (gradcheck raises there too), not an error of the run.
    """
    meter = checks.ReentrancyMeter(first, in_indices)
    try:
        analytical_jacobian(
            outputs,
            out_indices,
            leaves,
            in_indices,
            chunk_bytes=settings.chunk_bytes,
            progress=tracker,
            batched=first.path == "batched",
            visit=meter,
        )
    except Cancelled:
        raise
    except Exception as exc:
        return exc
    return meter


def _other_checks(
    fn, args, outputs, out_indices, in_indices, names, settings, second
) -> list[CheckOutcome]:
    """gradcheck's default checks after the Jacobian (unless jacobian_only), then double backward."""
    found = []
    leaf_names = [names[j] for j in in_indices]
    if settings.fast_mode:
        tol = {"eps": settings.eps, "atol": settings.atol, "rtol": settings.rtol, "nondet_tol": settings.nondet_tol}
        modes = {"check_forward_ad": settings.check_forward_ad, "check_backward_ad": settings.check_backward_ad}
        found.append(checks.check_fast_mode(fn, args, **tol, masked=settings.masked, **modes))
    found += _vmap_rule(fn, args, in_indices, out_indices, names, settings)
    if not settings.check_backward_ad:  # gradcheck's other checks rely on backward mode
        return found
    if settings.check_batched_grad:
        found.append(checks.check_batched_grad(args, outputs, out_indices))
    if not settings.jacobian_only:
        shapes = {(i, j): (tuple(outputs[i].shape), tuple(args[j].shape)) for i in out_indices for j in in_indices}
        if isinstance(second, Exception):
            found.append(
                CheckOutcome(
                    checks.REENTRANT,
                    checks.FAILED,
                    f"a second backward through the same graph raised {type(second).__name__}: {second}",
                )
            )
        else:
            found.append(second.outcome(shapes, names, settings.nondet_tol))
        differentiable = [outputs[i] for i in out_indices]
        found.append(
            checks.check_multiplied_by_grad_output(differentiable, [args[j] for j in in_indices], leaf_names)
        )
        found.append(checks.check_undefined_output_grads(fn, args, in_indices, leaf_names))
        found += opcheck_outcomes(fn, args)  # a custom op's registration: none for a Function
    if settings.all_checks:
        found.append(
            checks.check_double_backward(fn, args, eps=settings.eps, atol=settings.atol, rtol=settings.rtol)
        )
    return found


def _vmap_rule(fn, args, in_indices, out_indices, names, settings: CheckSettings) -> list[CheckOutcome]:
    """Beyond gradcheck, never the verdict: the Function's own vmap rule against plain calls
    (by default only where it declares one)."""
    if not (settings.check_vmap_rule or (settings.check_vmap_rule is None and vmap_rule.vmap_rule_of(fn))):
        return []
    tol = {"atol": settings.atol, "rtol": settings.rtol, "seed": settings.seed}
    return [vmap_rule.check_vmap_rule(fn, args, in_indices, out_indices, names, **tol)]


def _forward(fn: Checkable, args: tuple, code: _CodeFiles) -> tuple[tuple, bool, list[int], list[int]]:
    """One forward with autograd on; also tells whether later forwards need fresh copies of the
    inputs (it modified one in place, or returned one, as ``mark_dirty`` requires), and which
    modified inputs it did not declare with ``ctx.mark_dirty``, and which inputs it modified.

    The first forward runs on copies, to see what it modifies; when it modifies nothing, the
    outputs returned come from a second forward on the inputs themselves, as gradcheck's do."""
    copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    versions = [a._version if isinstance(a, torch.Tensor) else None for a in copies]
    try:
        with torch.enable_grad():
            outputs = call_apply(fn.apply, copies, clone=False)
    except (Exception, SystemExit) as exc:
        raise code.error(ErrorKind.FORWARD, exc, f"{fn.__name__}.forward") from None
    changed = [j for j, (a, v) in enumerate(zip(copies, versions)) if isinstance(a, torch.Tensor) and a._version != v]
    # mark_dirty rebases a modified input onto the Function's own node; without it the input keeps its
    # old one. Only inputs that need gradients matter: a buffer (running statistics) may change quietly.
    nodes = {o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None}
    undeclared = [j for j in changed if nodes and copies[j].requires_grad and copies[j].grad_fn not in nodes]
    returned = any(o is c for o in outputs for c in copies if isinstance(c, torch.Tensor))
    mutates = bool(changed) or returned
    if not mutates:
        # gradcheck's graph: on the caller's own tensors, so a backward that differentiates with respect
        # to an argument it also reads another way (through a module) finds it in its recomputation
        try:
            with torch.enable_grad():
                outputs = call_apply(fn.apply, args, clone=False)
        except (Exception, SystemExit) as exc:
            raise code.error(ErrorKind.FORWARD, exc, f"{fn.__name__}.forward") from None
    return outputs, mutates, undeclared, changed


def _output_infos(outputs: tuple, fn: Checkable, code: _CodeFiles, loaded: LoadedSource | None = None) -> list[TensorInfo]:
    """What forward returned; outputs gradviz cannot compare (complex, sparse, meta) are refused."""

    def refuse(message: str) -> UserCodeError:  # the line is found only when needed: it parses the source
        line = method_line(loaded, fn, "forward", last_return=True) if loaded else None
        return UserCodeError(ErrorKind.BAD_OUTPUT, f"{fn.__name__}.forward {message}", code.main, line)

    infos = []
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor):
            infos.append(TensorInfo(i, f"out{i}", None, None, False))
            continue
        if o.is_meta:
            raise refuse(f"returned a meta tensor as output {i}: it has no values to compare.")
        if o.is_quantized:
            raise refuse(
                f"returned a quantized tensor as output {i}; gradviz compares floating-point outputs. "
                "Return out.dequantize() to check it."
            )
        if o.layout != torch.strided:
            raise refuse(
                f"returned a {str(o.layout).removeprefix('torch.')} tensor as output {i}; gradviz (like "
                "gradcheck) compares dense outputs. Return out.to_dense() to check it."
            )
        infos.append(TensorInfo(i, f"out{i}", tuple(o.shape), str(o.dtype).removeprefix("torch."), o.requires_grad))
    if all(info.shape is None for info in infos):
        raise refuse(
            f"returned {type(outputs[0]).__name__ if outputs else 'nothing'}, not a tensor: forward must "
            "return a tensor or a tuple of tensors."
        )
    return infos


def _empty_blocks(outputs, out_indices, args, in_indices, names) -> list[str]:
    """Blocks with no cells (an output or input with 0 elements); all of them: nothing to check."""
    empty = [
        f"out{i} / {names[j]}"
        for i in out_indices
        for j in in_indices
        if outputs[i].numel() == 0 or args[j].numel() == 0
    ]
    if out_indices and len(empty) == len(out_indices) * len(in_indices):
        raise NothingToCheck(
            f"Nothing to check: every Jacobian block has 0 cells ({', '.join(empty)}): an input or output has "
            "0 elements. Give example_inputs non-empty tensors."
        )
    return empty


def _input_infos(inputs: PreparedInputs) -> list[TensorInfo]:
    infos = []
    for j, a in enumerate(inputs.args):
        if isinstance(a, torch.Tensor):
            dtype = str(a.dtype).removeprefix("torch.")
            infos.append(TensorInfo(j, inputs.names[j], tuple(a.shape), dtype, a.requires_grad))
        else:
            infos.append(TensorInfo(j, inputs.names[j], None, type(a).__name__, False))
    return infos


BYTES_PER_CELL = 8 + 8 + 4 + 1  # analytic, numerical (float64), error map (float32), failing mask


def _too_large(outputs, out_indices, leaves, settings: CheckSettings) -> str | None:
    """Why the Jacobians cannot be held (they and their maps would pass the memory limit), or None."""
    limit = settings.max_jacobian_bytes or default_memory_limit()
    rows = sum(outputs[i].numel() for i in out_indices)
    cols = sum(x.numel() for x in leaves)
    needed = rows * cols * BYTES_PER_CELL + 2 * settings.chunk_bytes
    if needed <= limit:
        return None
    return (
        f"The Jacobians would take {format_bytes(needed)} ({rows:,} output elements × {cols:,} input elements), "
        f"more than the limit of {format_bytes(limit)}: checked by random projections, as gradcheck's fast mode "
        "does, and wrong cells searched by bisection."
    )


def _check_large(
    fn, inputs, outputs, out_infos, out_indices, settings, why, progress, cancel, name, *, mutates: bool
) -> CheckResult:
    """A check that never holds a Jacobian: gradcheck's fast-mode verdict, then the wrong cells found.

    ``mutates``: the forward changes an input in place, so every probe runs on fresh copies."""
    args, in_indices = inputs.args, inputs.grad_indices
    start = time.perf_counter()
    tracker = Progress(len(out_indices) * len(in_indices) * large.MAX_PROBES, progress, cancel)
    checks_found = [_fast_gradcheck(fn, args, settings)]
    if settings.check_batched_grad:
        checks_found.append(checks.check_batched_grad(args, outputs, out_indices))
    checks_found += _vmap_rule(fn, args, in_indices, out_indices, inputs.names, settings)
    checks_found += [] if settings.jacobian_only else opcheck_outcomes(fn, args)
    found = []
    for i in out_indices if settings.check_backward_ad else []:  # the search probes the backward
        for j in in_indices:
            tracker.check_cancel()
            found.append(large.search_block(
                fn.apply, args, outputs[i], i, j, settings.tolerance(), clone_inputs=mutates, seed=settings.seed,
                progress=tracker,
            ))  # fmt: skip
            tracker.advance(large.MAX_PROBES)
    leaf = args[in_indices[0]]
    result = CheckResult(
        function=name or fn.__name__,
        device=str(leaf.device),
        dtype=str(leaf.dtype).removeprefix("torch."),
        inputs=_input_infos(inputs),
        outputs=out_infos,
        blocks=[],
        settings=settings,
        warnings=[why] + [f"{_large_title(b, inputs.names)}: the search stopped after {b.probes} calls; more cells may fail." for b in found if not b.complete],
        notes=list(inputs.notes),
        checks=checks_found,
        analytic_path="projections",
        numerical_path="projections",
        large_blocks=found,
    )
    result.seconds = {"total": time.perf_counter() - start}
    return result


def _large_title(block, names) -> str:
    return f"out{block.output} / {names[block.input]}"


def _fast_gradcheck(fn, args, settings: CheckSettings) -> CheckOutcome:
    """torch.autograd.gradcheck(fast_mode=True) itself: PyTorch's verdict from random projections."""
    # asked for by name (fast_mode=True): its verdict is the check's; else one check among the searched cells
    name = checks.FAST_MODE if settings.fast_mode else "fast_projection"

    def wrapper(*a):
        return call_apply(fn.apply, a, clone=True)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.autograd.gradcheck(
                wrapper, args, eps=settings.eps, atol=settings.atol, rtol=settings.rtol, fast_mode=True,
                check_undefined_grad=not settings.jacobian_only, nondet_tol=settings.nondet_tol, masked=settings.masked,
                check_forward_ad=settings.check_forward_ad, check_backward_ad=settings.check_backward_ad,
                check_batched_forward_grad=settings.check_batched_forward_grad,
            )
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return CheckOutcome(name, checks.FAILED, f"gradcheck(fast_mode=True) failed: {first}")
    return CheckOutcome(name, checks.PASSED, "gradcheck(fast_mode=True) passed on random projections.")


_COUNT = re.compile(r"returned an incorrect number of gradients")
_SHAPE = re.compile(r"returned an invalid gradient at index (\d+)")


def _analytic(fn, outputs, out_indices, leaves, in_indices, settings, tracker, loaded, code) -> Jacobian:
    try:
        return analytical_jacobian(
            outputs,
            out_indices,
            leaves,
            in_indices,
            chunk_bytes=settings.chunk_bytes,
            progress=tracker,
            batched=settings.batched,
        )
    except GradvizError:
        raise
    except (Exception, SystemExit) as exc:
        raise _backward_error(fn, exc, loaded, code) from None


def _backward_error(fn: Checkable, exc: BaseException, loaded: LoadedSource | None, code: _CodeFiles) -> UserCodeError:
    """Name the problem; engine-side checks point at backward's return statement."""
    error = code.error(ErrorKind.BACKWARD, exc, f"{fn.__name__}.backward")
    text = str(exc)
    kind = (
        ErrorKind.GRADIENT_COUNT
        if _COUNT.search(text)
        else ErrorKind.GRADIENT_SHAPE
        if _SHAPE.search(text)
        else None
    )
    if kind is None:
        if error.lineno is None and loaded:  # e.g. a TypeError calling backward: point at its def
            error.lineno = method_line(loaded, fn, "backward")
        return error
    error.kind = kind
    line = method_line(loaded, fn, "backward", last_return=True) if loaded else None
    error.lineno = line or error.lineno
    if kind == ErrorKind.GRADIENT_COUNT:
        error.message = (
            f"{fn.__name__}.backward returned the wrong number of gradients: {text.split('(')[-1].rstrip(')')}. "
            "Return one value per forward argument (None for non-tensors)."
        )
    else:
        index = int(_SHAPE.search(text).group(1))
        detail = text.split(" - ", 1)[-1]
        error.message = f"{fn.__name__}.backward returned a bad gradient for input {index}: {detail}."
    return error


def _numerical(fn, args, out_indices, in_indices, settings, mutates, tracker, code) -> Jacobian:
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
            batched=settings.batched,
        )
    except (GradvizError, Cancelled) as exc:
        if isinstance(exc, UserCodeError) and exc.filename == "<source>":
            exc.filename = code.main  # a refusal raised by gradviz itself about the user's forward
        raise
    except (Exception, SystemExit) as exc:
        context = f"{fn.__name__}.forward (on inputs perturbed by ±eps for finite differences)"
        raise code.error(ErrorKind.FORWARD, exc, context) from None


def _forward_noise(fn, args, outputs, out_indices) -> float:
    """Largest difference between the first forward and a second one on the same inputs.

    A forward that draws random numbers (or reads changing state) makes finite differences
    measure noise instead of slopes; one more forward is cheap next to the Jacobians.
    """
    try:
        with torch.enable_grad():  # as the first forward ran: copies require grad like the inputs
            again = call_apply(fn.apply, args, clone=True)
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
    except (Exception, SystemExit):  # the numerical Jacobian runs forward again and says what fails
        return 0.0


def _beyond_gradcheck(outputs: tuple) -> list[str]:
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


def _forward_warnings(fn, names, undeclared, noise: float, settings: CheckSettings) -> list[str]:
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


def _warnings(result: CheckResult, leaves, settings: CheckSettings, zero_analytic: bool, empty: list[str]) -> list[str]:
    warnings = []
    low = sorted({str(x.dtype).removeprefix("torch.") for x in leaves if x.dtype != torch.float64})
    if low and len(low) == 1 and settings.dtype == low[0] and settings.uses_dtype_defaults():
        warnings.append(DTYPE_DEFAULTS_NOTE.format(dtype=low[0], eps=settings.eps, atol=settings.atol, rtol=settings.rtol))
    elif low:
        own = DTYPE_DEFAULTS.get(low[0]) if len(low) == 1 else None
        suffix = f", or {low[0]}'s own defaults (eps={own.eps:g}, atol={own.atol:g}, rtol={own.rtol:g})" if own else ""
        warnings.append(FLOAT32_ADVICE.format(dtype=" and ".join(low), eps=settings.eps, own=suffix))
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
