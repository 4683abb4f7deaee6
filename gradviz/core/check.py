"""One gradient check from start to end, as a list of named steps like gradcheck's ``_gradcheck_helper``.

``check_function`` reads top to bottom: the inputs made ready, the first forward, both Jacobians,
their comparison and gradcheck's other checks (the verdict), then the explanation
(``check_explain``: hints, warnings, the diagnosis of failing blocks). The verdict is
``torch.autograd.gradcheck(...)``'s with its defaults: the Jacobian comparison plus the checks
gradcheck also runs by default (reentrancy, backward multiplied by grad_output, undefined
output gradients), in gradcheck's order; every cell is kept, so a failure can be shown instead of
summarised. ``jacobian_only`` drops the other checks; ``all_checks`` adds double backward. The
verdict is complete before the first explain step runs, so an explanation that is skipped or
fails never changes it.

The steps live beside it: ``user_code`` (the first forward, errors in user code), ``checks``
(gradcheck's other checks), ``forward_jacobian`` (forward mode), ``large`` (Jacobians too large
to hold), ``check_explain`` (what explains the verdict).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import cast

import torch

from gradviz.core import check_explain, check_warnings, checks, forward_jacobian, large, verdict_first
from gradviz.core.callables import Checkable, CustomOpFunction
from gradviz.core.check_run import CheckRun
from gradviz.core.compare import compare_block
from gradviz.core.complex_view import RealView, output_note, outputs_need_real_view, real_view
from gradviz.core.function_info import reads_data_attribute
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import CancelFn, Jacobian, Progress, ProgressFn
from gradviz.core.loader import LoadedSource
from gradviz.core.numerical_jacobian import numerical_jacobian
from gradviz.core.prepare import prepare_source
from gradviz.core.user_code import (
    CodeFiles,
    backward_error,
    first_forward,
    input_infos,
    output_infos,
    second_forward,
)
from gradviz.schema.errors import Cancelled, ErrorKind, GradvizError, UserCodeError
from gradviz.schema.results import BlockComparison, CheckResult, TensorInfo
from gradviz.schema.settings import CheckSettings, Tolerance

NO_FLOATING_OUTPUT = (
    "Nothing to check: {name}.forward returns no floating-point tensor (only {dtypes} outputs), so there is no "
    "Jacobian to compare."
)
ALL_BLOCKS_EMPTY = (
    "Nothing to check: every Jacobian block has 0 cells ({blocks}): an input or output has 0 elements. Give "
    "example_inputs non-empty tensors."
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
    maps: str = "eager",
) -> CheckResult:
    """Check one Function of loaded user source on the inputs its ``example_inputs`` gives.

    Args:
        loaded: the user's source, loaded (``core.loader``).
        function: the Function to check; None for the source's default.
        settings: how to check; None for gradcheck's defaults.
        progress: called with the work done so far.
        cancel: raises ``Cancelled`` when the run is to stop.
        maps: as for ``check_function``.

    Returns:
        The check's result, with every Function the source offers in ``functions``.
    """
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
        maps=maps,
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
    maps: str = "eager",
) -> CheckResult:
    """Both Jacobians of ``fn.apply`` at ``inputs``, their comparison, and gradcheck's other checks.

    With ``fast_mode`` the verdict is gradcheck's projections', and nothing needs the Jacobians:
    ``maps`` says when they are built. ``"eager"``: always, as for the default mode;
    ``"failing"``: only when the check fails (the CLI's ``--save``); ``"deferred"``: never here
    (``result.deferred_maps``: the caller builds them on demand with ``jacobian_maps``).

    Args:
        fn: the Function (or a callable made checkable, ``core.callables``).
        inputs: the arguments of ``fn.apply`` and which of them are differentiated.
        settings: how to check; None for gradcheck's defaults.
        loaded: the source ``fn`` comes from, so errors point at its lines.
        progress: called with the work done so far.
        cancel: raises ``Cancelled`` when the run is to stop.
        notes: notes to put first in the result's.
        name: what the user calls the Function (a factory-made class may have another __name__).
        maps: "eager", "failing" or "deferred", as above; no effect without fast_mode.

    Returns:
        The result; ``result.passed`` is gradcheck's verdict.

    Raises:
        UserCodeError: the user's forward or backward raised, or returned what cannot be compared.
        NothingToCheck: there is no Jacobian cell to compare.
        Cancelled: ``cancel`` asked the run to stop.
    """
    verdict_first.check_maps_policy(maps)
    fn, inputs, settings = _ready(fn, inputs, settings or CheckSettings(), loaded)
    start = time.perf_counter()
    first = _first_forward(fn, inputs, loaded)
    if outputs_need_real_view(first.outputs):  # complex outputs of real inputs: check them as real ones
        viewed = dataclasses.replace(inputs, notes=[*inputs.notes, output_note()])
        real = cast(Checkable, RealView(fn, frozenset()))
        return check_function(
            real, viewed, settings, loaded=loaded, progress=progress, cancel=cancel, notes=notes, name=name,
            maps=maps,
        )  # fmt: skip
    run = CheckRun(fn, inputs, first.outputs, first.out_indices, settings, first.mutates, first.code, loaded)
    empty = _empty_blocks(run)
    deferred = maps != "eager" and not first.zero_analytic and verdict_first.applies(run)
    too_large = None if deferred else large.too_large(run)  # deferred maps are measured when built
    if deferred or (too_large and not first.zero_analytic):
        result = verdict_first.check_without_jacobians(
            run, first.out_infos, name, why=too_large, progress=progress, cancel=cancel
        )
        result.notes = [*(notes or []), *result.notes]
        if result.deferred_maps and maps == "failing" and not result.passed:
            verdict_first.attach_maps(result, jacobian_maps(fn, inputs, settings, loaded=loaded, name=name))
        return result
    again = second_forward(fn, inputs.args)  # the numerical reference, and the forward's noise

    tracker = _progress(run, first.zero_analytic, progress, cancel)
    jacobians = _jacobians(run, tracker, again, first.zero_analytic)
    result = _verdict(run, first, jacobians, tracker, name=name or fn.__name__, notes=notes or [])
    check_explain.explain(
        run, result, check_function, findings=_findings(first, again, jacobians, empty), tracker=tracker
    )
    result.seconds = {**jacobians.seconds(start), "total": time.perf_counter() - start}
    return result


def jacobian_maps(
    fn: Checkable,
    inputs: PreparedInputs,
    settings: CheckSettings,
    *,
    loaded: LoadedSource | None = None,
    name: str | None = None,
    progress: ProgressFn | None = None,
) -> CheckResult:
    """The maps of a fast-mode check whose verdict came first: both Jacobians at the same inputs,
    compared and explained exactly as an eager check builds them, without the checks that gave
    the verdict (``verdict_first.attach_maps`` joins the two).

    Args:
        fn, inputs, loaded, name, progress: as given to ``check_function``.
        settings: the verdict's settings.

    Returns:
        A result whose blocks are the maps (its checks are not the verdict's).
    """
    return check_function(
        fn, inputs, verdict_first.maps_settings(settings), loaded=loaded, progress=progress, name=name
    )


@dataclass(frozen=True)
class FirstForward:
    """What the first forward tells the rest of the check: the outputs and which are compared,
    whether later forwards need copies, and the inputs it modified."""

    outputs: tuple
    out_infos: list[TensorInfo]
    out_indices: list[int]  # the outputs whose Jacobian rows are compared
    zero_analytic: bool  # no differentiable output: the numerical Jacobian must be exactly 0
    mutates: bool
    undeclared: list[int]  # inputs modified in place without ctx.mark_dirty
    changed: list[int]  # inputs modified in place
    code: CodeFiles


@dataclass
class Jacobians:
    """Both Jacobians, the second analytic pass (reentrancy) and forward mode, with their times."""

    numerical: Jacobian
    analytic: Jacobian | None  # None: no differentiable output, or check_backward_ad=False
    second: checks.ReentrancyMeter | Exception | None  # None under jacobian_only
    times: tuple[float, float]  # when the numerical Jacobian was done, and the analytic one
    forward: forward_jacobian.ForwardFindings = dataclasses.field(
        default_factory=forward_jacobian.ForwardFindings
    )

    def seconds(self, start: float) -> dict[str, float]:
        numerical, analytic = self.times
        return {"numerical": numerical - start, "analytic": analytic - numerical}


def _ready(
    fn: Checkable, inputs: PreparedInputs, settings: CheckSettings, loaded: LoadedSource | None
) -> tuple[Checkable, PreparedInputs, CheckSettings]:
    """Settings validated, complex inputs viewed as real, and vmap off where it cannot run the Function."""
    settings.validate()
    fn, inputs = real_view(fn, inputs)
    if isinstance(fn, RealView):
        settings = dataclasses.replace(settings, batched=False)  # view_as_complex is not vmapped everywhere
    if settings.batched and reads_data_attribute(fn, loaded.source if loaded else None):
        settings = dataclasses.replace(settings, batched=False)  # vmap + .data would crash the process
    return fn, inputs, settings


def _first_forward(fn: Checkable, inputs: PreparedInputs, loaded: LoadedSource | None) -> FirstForward:
    """One forward, its outputs described, and the outputs compared; errors point at the user's forward."""
    code = CodeFiles(fn, loaded)
    outputs, mutates, undeclared, changed = first_forward(fn, inputs.args, code)
    if outputs_need_real_view(outputs):  # the caller checks the real view instead: nothing more to read here
        return FirstForward(outputs, [], [], False, mutates, undeclared, changed, code)
    out_infos = output_infos(outputs, fn, code, loaded)
    out_indices = [o.index for o in out_infos if o.requires_grad]
    # Like gradcheck: with no differentiable output, the numerical Jacobian must be exactly zero.
    zero_analytic = not out_indices
    if zero_analytic:
        out_indices = [
            o.index for o in out_infos if o.shape is not None and outputs[o.index].is_floating_point()
        ]
        if not out_indices:
            dtypes = ", ".join(sorted({o.dtype or "non-tensor" for o in out_infos}))
            raise NothingToCheck(NO_FLOATING_OUTPUT.format(name=fn.__name__, dtypes=dtypes))
    return FirstForward(outputs, out_infos, out_indices, zero_analytic, mutates, undeclared, changed, code)


def _empty_blocks(run: CheckRun) -> list[str]:
    """Blocks with no cells (an output or input with 0 elements); all of them: nothing to check."""
    empty = [
        f"out{i} / {run.names[j]}"
        for i in run.out_indices
        for j in run.in_indices
        if run.outputs[i].numel() == 0 or run.args[j].numel() == 0
    ]
    if run.out_indices and len(empty) == len(run.out_indices) * len(run.in_indices):
        raise NothingToCheck(ALL_BLOCKS_EMPTY.format(blocks=", ".join(empty)))
    return empty


def _progress(
    run: CheckRun, zero_analytic: bool, progress: ProgressFn | None, cancel: CancelFn | None
) -> Progress:
    """One tracker for the whole check: rows of each analytic pass, columns of each numerical and
    forward-mode one."""
    settings = run.settings
    rows = sum(run.outputs[i].numel() for i in run.out_indices)
    cols = sum(x.numel() for x in run.leaves)
    passes = 1 if zero_analytic or not settings.check_backward_ad else (2 if settings.jacobian_only else 3)
    forward_cols = cols if settings.check_forward_ad and not zero_analytic else 0  # one forward-AD call each
    return Progress(rows * (passes - 1) + cols + forward_cols, progress, cancel)


def _jacobians(run: CheckRun, tracker: Progress, again: tuple | None, zero_analytic: bool) -> Jacobians:
    """gradcheck's order: numerical first, then the analytic rows twice through the same graph
    (the second pass is the reentrancy check), then forward mode."""
    settings = run.settings
    numerical = _numerical(run, tracker, reference=again)
    after_numerical = time.perf_counter()
    analytic = second = None
    if not zero_analytic and settings.check_backward_ad:  # check_backward_ad=False: forward mode alone
        analytic = _analytic(run, tracker)
        if not settings.jacobian_only:
            second = checks.second_pass(run, analytic, tracker)
    return Jacobians(numerical, analytic, second, (after_numerical, time.perf_counter()))


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


def _analytic(run: CheckRun, tracker: Progress) -> Jacobian:
    """The analytic rows from the user's backward; its errors point at the user's backward."""
    try:
        return run.analytic_rows(tracker, batched=run.settings.batched)
    except GradvizError:
        raise
    except (Exception, SystemExit) as exc:
        raise backward_error(run.fn, exc, run.loaded, run.code, run.names, run.outputs) from None


def _verdict(
    run: CheckRun,
    first: FirstForward,
    jacobians: Jacobians,
    tracker: Progress,
    *,
    name: str,
    notes: list[str],
) -> CheckResult:
    """The result with everything gradcheck's verdict reads (``CheckResult.passed``): the compared
    blocks, the forward-mode blocks and gradcheck's other checks. Nothing after this changes them."""
    settings, zero_analytic = run.settings, first.zero_analytic
    backward = zero_analytic or settings.check_backward_ad
    blocks = _compare(run, jacobians.numerical, jacobians.analytic, zero_analytic) if backward else []
    leaves = run.leaves
    result = CheckResult(
        function=name,
        device=str(leaves[0].device),
        dtype=str(leaves[0].dtype).removeprefix("torch."),
        inputs=input_infos(run.inputs),
        outputs=first.out_infos,
        blocks=blocks,
        settings=settings,
        notes=[*notes, *run.inputs.notes],
        analytic_path=jacobians.analytic.path if jacobians.analytic else "none",
        numerical_path=jacobians.numerical.path,
    )
    if zero_analytic:  # gradcheck checks nothing else without a differentiable output
        return result
    if settings.check_forward_ad:
        jacobians.forward = forward_jacobian.check_forward_mode(
            run, jacobians.numerical, progress=tracker, backward_blocks=blocks
        )
        result.forward_blocks = jacobians.forward.blocks
    tracker.check_cancel()
    result.checks = [*checks.other_checks(run, jacobians.second), *jacobians.forward.checks]
    return result


def _findings(
    first: FirstForward, again: tuple | None, jacobians: Jacobians, empty: list[str]
) -> check_explain.Findings:
    """What the explanation reads of the way to the verdict."""
    notes = [j.note for j in (jacobians.numerical, jacobians.analytic) if j is not None and j.note]
    noise = check_warnings.forward_noise(first.outputs, again, first.out_indices)
    return check_explain.Findings(
        first.zero_analytic, empty, first.undeclared, first.changed, noise, notes, jacobians.forward.warnings
    )


def _compare(
    run: CheckRun, numerical: Jacobian, analytic: Jacobian | None, zero_analytic: bool
) -> list[BlockComparison]:
    """Every block compared as gradcheck compares it (zero tolerance where the Jacobian must be 0)."""
    settings, outputs, args = run.settings, run.outputs, run.args
    tol = Tolerance(settings.eps, 0.0, 0.0) if zero_analytic else settings.tolerance()
    blocks = []
    for (i, j), n in numerical.blocks.items():
        a = analytic.blocks[i, j] if analytic else n * 0.0
        dtype = torch.promote_types(args[j].dtype, outputs[i].dtype)
        blocks.append(
            compare_block(i, j, tuple(outputs[i].shape), tuple(args[j].shape), a, n, tol, compute_dtype=dtype)
        )
    return blocks
