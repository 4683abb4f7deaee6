"""One gradient check from start to end: inputs, forward, both Jacobians, the verdict.

This is what the CLI prints and the app draws. The verdict is
``torch.autograd.gradcheck(...)``'s with its defaults: the Jacobian comparison plus the checks
gradcheck also runs by default (reentrancy, backward multiplied by grad_output, undefined
output gradients), in gradcheck's order; every cell is kept, so a failure can be shown instead of
summarised. ``jacobian_only`` drops the other checks; ``all_checks`` adds double backward.

The steps live beside it: ``user_code`` (the first forward, errors in user code),
``check_warnings`` (what explains the verdict), ``checks`` (gradcheck's other checks),
``large`` (Jacobians too large to hold).
"""

from __future__ import annotations

import dataclasses
import time

import torch

from gradviz.core import check_warnings, checks, forward_jacobian, large
from gradviz.core.callables import Checkable, CustomOpFunction
from gradviz.core.check_run import CheckRun
from gradviz.core.compare import compare_block
from gradviz.core.complex_view import (
    RealView,
    conjugate_hints,
    output_note,
    outputs_need_real_view,
    real_view,
)
from gradviz.core.diagnosis import explain_failures
from gradviz.core.function_info import reads_data_attribute
from gradviz.core.hints import diagnose, diagnose_across
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import CancelFn, Jacobian, Progress, ProgressFn
from gradviz.core.loader import LoadedSource
from gradviz.core.numerical_jacobian import numerical_jacobian
from gradviz.core.prepare import prepare_source
from gradviz.core.user_code import CodeFiles, backward_error, first_forward, input_infos, output_infos
from gradviz.schema.errors import Cancelled, ErrorKind, GradvizError, UserCodeError
from gradviz.schema.results import BlockComparison, CheckResult
from gradviz.schema.settings import CheckSettings, Tolerance


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
    code = CodeFiles(fn, loaded)
    args, in_indices = inputs.args, inputs.grad_indices
    leaves = [args[j] for j in in_indices]
    start = time.perf_counter()

    outputs, mutates, undeclared, changed = first_forward(fn, args, code)
    if outputs_need_real_view(outputs):  # complex outputs of real inputs: check them as real ones
        return check_function(
            RealView(fn, frozenset()), dataclasses.replace(inputs, notes=[*inputs.notes, output_note()]), settings,
            loaded=loaded, progress=progress, cancel=cancel, notes=notes, name=name,
        )
    out_infos = output_infos(outputs, fn, code, loaded)
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
    run = CheckRun(fn, inputs, outputs, out_indices, settings, mutates, code, loaded)
    empty = _empty_blocks(run)
    again = check_warnings.second_forward(fn, args)
    noise = check_warnings.forward_noise(outputs, again, out_indices)
    too_large = large.too_large(run)
    if too_large and not zero_analytic:
        return large.check_large(run, out_infos, too_large, name, progress=progress, cancel=cancel)

    rows = sum(outputs[i].numel() for i in out_indices)
    cols = sum(x.numel() for x in leaves)
    passes = 1 if zero_analytic or not settings.check_backward_ad else (2 if settings.jacobian_only else 3)
    forward_cols = cols if settings.check_forward_ad and not zero_analytic else 0  # one forward-AD call each
    tracker = Progress(rows * (passes - 1) + cols + forward_cols, progress, cancel)
    # gradcheck's order: numerical first, then the analytic rows twice through the same graph
    numerical = _numerical(run, tracker, reference=again)
    t_numerical = time.perf_counter()
    analytic = second = None
    if not zero_analytic and settings.check_backward_ad:  # check_backward_ad=False: forward mode alone
        analytic = _analytic(run, tracker)
        if not settings.jacobian_only:
            second = checks.second_pass(run, analytic, tracker)
    t_analytic = time.perf_counter()

    backward = zero_analytic or settings.check_backward_ad
    blocks = _compare(run, numerical, analytic, zero_analytic) if backward else []
    result = CheckResult(
        function=name or fn.__name__,
        device=str(leaves[0].device),
        dtype=str(leaves[0].dtype).removeprefix("torch."),
        inputs=input_infos(inputs),
        outputs=out_infos,
        blocks=blocks,
        settings=settings,
        notes=(notes or []) + inputs.notes,
        analytic_path=analytic.path if analytic else "none",
        numerical_path=numerical.path,
    )
    if isinstance(fn, RealView):
        conjugate_hints(blocks, settings.atol, settings.rtol)
    result.warnings = check_warnings.result_warnings(result, leaves, settings, zero_analytic, empty)
    result.warnings += [j.note for j in (numerical, analytic) if j is not None and j.note]
    result.warnings += check_warnings.forward_warnings(fn, inputs.names, undeclared, noise, settings)
    result.notes += check_warnings.beyond_gradcheck(outputs)
    result.notes += check_warnings.in_place_note(changed, in_indices, inputs.names)
    forward = forward_jacobian.ForwardFindings()
    if settings.check_forward_ad and not zero_analytic:
        forward = forward_jacobian.check_forward_mode(run, numerical, progress=tracker, backward_blocks=blocks)
        result.forward_blocks, result.warnings = forward.blocks, result.warnings + forward.warnings
    if settings.explain and not zero_analytic:
        _explain(run, result, tracker, noise)
    if not zero_analytic:
        tracker.check_cancel()
        result.checks = checks.other_checks(run, second)
        result.checks += forward.checks
        result.warnings += checks.fast_mode_warnings(result.checks, result.n_failing)
    end = time.perf_counter()
    result.seconds = {
        "numerical": t_numerical - start,
        "analytic": t_analytic - t_numerical,
        "total": end - start,
    }
    return result


def _explain(run: CheckRun, result: CheckResult, tracker: Progress, noise: float) -> None:
    """Why cells fail, never whether: one diagnosis per failing block (``core/diagnosis.py``) from
    the kink probe, the forward's measured round-off and a re-check where one helps."""
    if result.n_failing:
        explain_failures(
            run.fn, run.inputs, run.settings, result, check_function, clone_inputs=run.mutates, noise=noise,
            cancel=tracker.check_cancel, cancel_flag=tracker.cancel,
        )  # fmt: skip


def _compare(run: CheckRun, numerical: Jacobian, analytic: Jacobian | None, zero_analytic: bool) -> list[BlockComparison]:
    """Every block compared as gradcheck compares it (zero tolerance where the Jacobian must be 0)."""
    settings, outputs, args, names = run.settings, run.outputs, run.args, run.names
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


def _empty_blocks(run: CheckRun) -> list[str]:
    """Blocks with no cells (an output or input with 0 elements); all of them: nothing to check."""
    empty = [
        f"out{i} / {run.names[j]}"
        for i in run.out_indices
        for j in run.in_indices
        if run.outputs[i].numel() == 0 or run.args[j].numel() == 0
    ]
    if run.out_indices and len(empty) == len(run.out_indices) * len(run.in_indices):
        raise NothingToCheck(
            f"Nothing to check: every Jacobian block has 0 cells ({', '.join(empty)}): an input or output has "
            "0 elements. Give example_inputs non-empty tensors."
        )
    return empty


def _analytic(run: CheckRun, tracker: Progress) -> Jacobian:
    """The analytic rows from the user's backward; its errors point at the user's backward."""
    try:
        return run.analytic_rows(tracker, batched=run.settings.batched)
    except GradvizError:
        raise
    except (Exception, SystemExit) as exc:
        raise backward_error(run.fn, exc, run.loaded, run.code, run.names) from None


def _numerical(run: CheckRun, tracker: Progress, reference: tuple | None = None) -> Jacobian:
    """The numerical columns by central differences; errors in the forward point at the user's forward."""
    try:
        return numerical_jacobian(
            run.fn.apply,
            run.args,
            run.out_indices,
            run.in_indices,
            eps=run.settings.eps,
            clone_inputs=run.mutates,
            chunk_bytes=run.settings.chunk_bytes,
            progress=tracker,
            batched=run.settings.batched,
            reference=reference,
        )
    except (GradvizError, Cancelled) as exc:
        if isinstance(exc, UserCodeError) and exc.filename == "<source>":
            exc.filename = run.code.main  # a refusal raised by gradviz itself about the user's forward
        raise
    except (Exception, SystemExit) as exc:
        context = f"{run.fn.__name__}.forward (on inputs perturbed by ±eps for finite differences)"
        raise run.code.error(ErrorKind.FORWARD, exc, context) from None
