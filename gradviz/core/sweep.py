"""The eps sweep: is the backward wrong, or the finite difference?

Two measurements, read together (PETSc's and dolfin-adjoint's Taylor tests, ADCME's remainder
plot):

1. Directional Taylor test (``core/taylor_test.py``): f along random directions at every step;
   a right backward leaves a remainder of slope 2, a wrong one of slope 1.
2. Jacobian sweep of a block (here): the central-difference Jacobian at every step, computed as
   the check computes it, against the analytic block. Its error falls like eps² (truncation) and
   rises like 1/eps (round-off); the bottom of that valley is the eps to use.

The verdict is read from both curves by ``core/sweep_verdict.py``. The sweep explains a verdict;
it never changes one.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections.abc import Sequence

import numpy as np
import torch

from gradviz.core.callables import Checkable
from gradviz.core.complex_view import RealView, outputs_need_real_view, real_view
from gradviz.core.diagnosis import explain_sweep, machine_eps_for_sweep
from gradviz.core.function_info import reads_data_attribute, source_file
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import (
    CancelFn,
    Progress,
    ProgressFn,
    analytical_jacobian,
    call_apply,
    chunk_length,
)
from gradviz.core.perturb import PerturbedForward
from gradviz.core.prepare import prepare_source
from gradviz.core.sweep_run import SweepRun
from gradviz.core.sweep_verdict import (
    NO_EPS_HELPS,
    classify,
    judge_overall,
    step_index,
    summarize,
    taylor_block,
)
from gradviz.core.taylor_test import DirectionalTaylorTest
from gradviz.schema.errors import (
    Cancelled,
    ErrorKind,
    GradvizError,
    SettingsError,
    SizeLimitError,
    from_exception,
)
from gradviz.schema.indices import cell_index, cell_label
from gradviz.schema.settings import MACHINE_EPS, CheckSettings, SweepOptions, default_memory_limit
from gradviz.schema.sweep import BlockSweep, CellCurve, SweepResult
from gradviz.schema.time_left import SWEEP_UNIT
from gradviz.schema.units import format_bytes

SWEEP_CHUNK_FACTOR = 4  # the sweep's vmapped chunks may be this many times the check's


class NothingToSweep(GradvizError):
    kind = ErrorKind.NOTHING_TO_CHECK


def sweep_source(
    loaded,
    function: str | None = None,
    settings: CheckSettings | None = None,
    *,
    options: SweepOptions | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> SweepResult:
    """Sweep one Function of loaded user source on the inputs its ``example_inputs`` gives."""
    settings = settings or CheckSettings()
    prepared = prepare_source(loaded, function, settings)
    if settings.batched and reads_data_attribute(prepared.fn, loaded.source):
        settings = dataclasses.replace(settings, batched=False)  # vmap + .data would crash the process
    return sweep_function(
        prepared.fn,
        prepared.inputs,
        settings,
        options=options,
        progress=progress,
        cancel=cancel,
        name=prepared.name,
        filename=loaded.filename,
    )


def sweep_function(
    fn: Checkable,
    inputs: PreparedInputs,
    settings: CheckSettings | None = None,
    *,
    block: tuple[int, int] | None = None,
    options: SweepOptions | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    name: str | None = None,
    filename: str | None = None,
) -> SweepResult:
    """Taylor remainders of every block and of the whole Function, and the Jacobian sweep of
    ``block`` (``(output, input)``; default: every block of at most ``options.max_block_cells``).

    ``settings`` gives the dtype, device, seed and the check's eps, atol and rtol the verdict
    speaks about; ``options`` the steps (the check's eps is always one of them).
    """
    settings = settings or CheckSettings()
    settings.validate()
    fn, inputs = real_view(fn, inputs)
    if settings.batched and (isinstance(fn, RealView) or reads_data_attribute(fn)):
        settings = dataclasses.replace(settings, batched=False)
    options = options or SweepOptions()
    if block is not None:
        options = SweepOptions(**{**options.__dict__, "block": tuple(block)})
    options.validate()
    start = time.perf_counter()
    where = filename or source_file(fn) or "<source>"
    steps = sorted({float(s) for s in options.steps} | {float(settings.eps)}, reverse=True)
    args, in_indices, names = inputs.args, inputs.grad_indices, inputs.names
    leaves = [args[j] for j in in_indices]

    try:
        with torch.enable_grad():
            outputs = call_apply(fn.apply, args, clone=True)
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.FORWARD, exc, where, f"{fn.__name__}.forward") from None
    if outputs_need_real_view(outputs):  # complex outputs: swept through their real and imaginary parts
        return sweep_function(
            RealView(fn, frozenset()), inputs, settings, block=block, options=options, progress=progress,
            cancel=cancel, name=name, filename=filename,
        )
    out_indices = [
        i
        for i, o in enumerate(outputs)
        if isinstance(o, torch.Tensor) and o.requires_grad and o.is_floating_point() and o.numel()
    ]
    in_indices = [j for j in in_indices if args[j].numel()]
    if not out_indices or not in_indices:
        raise NothingToSweep(
            f"Nothing to sweep: {fn.__name__} has no differentiable non-empty output and input pair."
        )
    pairs = [(i, j) for i in out_indices for j in in_indices]
    swept = _blocks_to_sweep(pairs, outputs, args, names, options)
    _guard_size(swept, outputs, args, settings)

    units = sum(sweep_units(args[j].numel(), len(steps), options) for j in {j for _, j in swept})
    tracker = Progress(units + 2 * len(steps) * (len(in_indices) + 1), progress, cancel, unit=SWEEP_UNIT)
    dtype_name = str(leaves[0].dtype).removeprefix("torch.")
    # the forward's measured round-off where coarser than its dtype's (float32 inside a float64 Function)
    machine = machine_eps_for_sweep(fn, args, in_indices, out_indices, settings, MACHINE_EPS.get(dtype_name, MACHINE_EPS["float64"]))
    generator = torch.Generator(device="cpu").manual_seed((settings.seed + 1) % 2**63)
    run = SweepRun(fn, args, outputs, names, out_indices, in_indices, steps, settings, where, generator, tracker)

    directional = DirectionalTaylorTest(run, machine)
    analytic = _analytic_blocks(run, swept)

    blocks, paths, notes = [], set(), []
    by_input: dict[int, list[int]] = {}
    for i, j in swept:
        by_input.setdefault(j, []).append(i)
    sweeps = {}
    for j, outs in by_input.items():
        found, path, note = _sweep_input(run, options, analytic, j, outs)
        sweeps.update(found)
        paths.add(path)
        if note:
            notes.append(note)
    for i, j in pairs:
        tracker.check_cancel()
        b = taylor_block(
            steps, *directional.block(i, j, tracker), output=i, input=j, title=f"out{i} / {names[j]}",
            shape=(outputs[i].numel(), args[j].numel()),
        )  # fmt: skip
        if (i, j) in sweeps:
            b.errors, b.ratios, b.failing, b.cells, b.columns = sweeps[i, j]
        classify(b, steps, settings, dtype_name)
        blocks.append(b)
    overall = _overall(run, directional, blocks, dtype_name)
    explain_sweep(fn, args, blocks, overall, settings, directional.g)  # the check's diagnosis, same probes
    skipped = [b.title for b in blocks if not b.swept]
    if skipped and options.block is None:
        notes.append(
            f"Swept along one direction only (more than {options.max_block_cells:,} cells): {', '.join(skipped)}. "
            "Choose one of them as the block to sweep it cell by cell."
        )
    verdict, message = summarize(blocks, overall, settings)
    return SweepResult(
        function=name or fn.__name__,
        device=str(leaves[0].device),
        dtype=dtype_name,
        steps=steps,
        eps=settings.eps,
        atol=settings.atol,
        rtol=settings.rtol,
        blocks=blocks,
        overall=overall,
        verdict=verdict,
        message=message,
        # an eps to re-run at only where the backward is right (a wrong one fails at every eps)
        best_eps=overall.best_eps if verdict not in NO_EPS_HELPS else None,
        notes=notes + list(inputs.notes),
        seconds=time.perf_counter() - start,
        path="loop" if "loop" in paths else "batched",
    )


# --- the Jacobian sweep of a block -----------------------------------------------------------


def _blocks_to_sweep(pairs, outputs, args, names, options: SweepOptions) -> list[tuple[int, int]]:
    if options.block is not None:
        if options.block not in pairs:
            listed = ", ".join(f"{i},{j} (out{i} / {names[j]})" for i, j in pairs)
            raise SettingsError(f"No block {options.block[0]},{options.block[1]} to sweep: the blocks are {listed}.")
        return [options.block]
    return [(i, j) for i, j in pairs if outputs[i].numel() * args[j].numel() <= options.max_block_cells]


def _guard_size(swept, outputs, args, settings: CheckSettings) -> None:
    limit = settings.max_jacobian_bytes or default_memory_limit()
    needed = sum(outputs[i].numel() * args[j].numel() * 8 for i, j in swept)
    if needed > limit:
        raise SizeLimitError(
            f"The analytic blocks to sweep would take {format_bytes(needed)}, more than the limit of "
            f"{format_bytes(limit)}. Choose one block to sweep, or raise the limit (--max-memory-mb)."
        )


def _analytic_blocks(run: SweepRun, swept: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
    """The analytic blocks to sweep, from the user's backward (batched where it allows)."""
    if not swept:
        return {}
    outs = sorted({i for i, _ in swept})
    ins = sorted({j for _, j in swept})
    try:
        jac = analytical_jacobian(
            run.outputs,
            outs,
            [run.args[j] for j in ins],
            ins,
            chunk_bytes=run.settings.chunk_bytes,
            progress=_quiet(run.tracker),
            batched=run.settings.batched,
        )
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        raise run.backward_error(exc) from None
    return {key: jac.blocks[key] for key in swept}


def _sweep_input(run: SweepRun, options: SweepOptions, analytic: dict, j: int, outs: list[int]):
    """Every swept block of input j at every step: largest error, worst ratio, failing count, worst cells.

    Inputs with more than ``options.max_columns`` elements are swept on that many columns: the
    worst quarter at the check's eps (found by one central difference per column) and the rest
    drawn at random.
    """
    settings, steps, tracker = run.settings, run.steps, run.tracker
    forward = PerturbedForward(run.fn.apply, run.args, j, outs, clone_inputs=True, batched=settings.batched)
    numel = run.args[j].numel()
    columns = np.arange(numel)
    if options.max_columns and numel > options.max_columns:
        columns = _choose_columns(run, options, forward, analytic, j, outs)
    signed = [s for h in steps for s in (h, -h)]
    k = chunk_length(len(signed) * forward.row_bytes, len(columns), SWEEP_CHUNK_FACTOR * settings.chunk_bytes)
    n_steps = len(steps)
    at = step_index(steps, settings.eps)
    stats = {
        i: {
            "errors": np.zeros(n_steps),
            "ratios": np.zeros(n_steps),
            "failing": np.zeros(n_steps, dtype=np.int64),
            "worst": [],  # heap of (error at eps, row, col, curve, analytic)
        }
        for i in outs
    }
    for c0 in range(0, len(columns), k):
        tracker.check_cancel()
        chunk = columns[c0 : c0 + k]
        found = _evaluate(run, forward, chunk, signed)
        for i in outs:
            numerical = _central_differences(found[i], steps, len(chunk))
            _accumulate(stats[i], numerical, analytic[i, j][:, chunk], chunk, at, settings, options.worst_cells)
        tracker.advance(len(chunk) * len(signed))
    result = {}
    for i in outs:
        s = stats[i]
        cells = []
        for _, row, col, curve, a in sorted(s["worst"], reverse=True):
            out_idx, in_idx = cell_index(row, col, tuple(run.outputs[i].shape), tuple(run.args[j].shape))
            cells.append(CellCurve(row, col, cell_label(i, out_idx, run.names[j], in_idx), a, curve))
        result[i, j] = (s["errors"].tolist(), s["ratios"].tolist(), s["failing"].tolist(), cells, len(columns))
    return result, forward.path, forward.note


def sweep_units(numel: int, n_steps: int, options: SweepOptions) -> int:
    """Forward evaluations the Jacobian sweep of an input with ``numel`` elements costs."""
    if options.max_columns and numel > options.max_columns:
        return 2 * numel + 2 * n_steps * options.max_columns
    return 2 * n_steps * numel


def _choose_columns(
    run: SweepRun, options: SweepOptions, forward: PerturbedForward, analytic: dict, j: int, outs: list[int]
) -> np.ndarray:
    """The worst quarter of input j's columns at the check's eps, and the rest at random."""
    settings, tracker = run.settings, run.tracker
    numel = forward.values.numel()
    signed = [settings.eps, -settings.eps]
    worst = np.zeros(numel)
    k = chunk_length(len(signed) * forward.row_bytes, numel, SWEEP_CHUNK_FACTOR * settings.chunk_bytes)
    for c0 in range(0, numel, k):
        tracker.check_cancel()
        chunk = np.arange(c0, min(numel, c0 + k))
        found = _evaluate(run, forward, chunk, signed)
        for i in outs:
            n = _central_differences(found[i], [settings.eps], len(chunk))[0]  # column, row
            a = torch.from_numpy(np.ascontiguousarray(analytic[i, j][:, chunk].T))
            ratio = (n - a).abs_().div_(n.abs().mul_(settings.rtol).add_(settings.atol)).nan_to_num_(nan=math.inf)
            worst[chunk] = np.maximum(worst[chunk], ratio.amax(dim=1).numpy())
        tracker.advance(len(chunk) * 2)
    m = options.max_columns
    chosen = np.argsort(-worst, kind="stable")[: max(1, m // 4)]
    rest = np.setdiff1d(np.arange(numel), chosen)
    drawn = rest[torch.randperm(len(rest), generator=run.generator)[: m - len(chosen)].numpy()]
    return np.sort(np.concatenate([chosen, drawn]))


def _evaluate(run: SweepRun, forward: PerturbedForward, columns, signed) -> dict[int, torch.Tensor]:
    try:
        return forward(forward.shifted(columns, signed))
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        raise run.forward_error(exc, " (on inputs perturbed by ±eps for the sweep)") from None


def _central_differences(outs: torch.Tensor, steps: Sequence[float], k: int) -> torch.Tensor:
    """``(f(x + h e_c) - f(x - h e_c)) / (2h)`` in the output's dtype, as the check computes it;
    returned in float64, shaped (step, column, row)."""
    pairs = outs.view(len(steps), 2, k, outs.shape[1])
    numerical = torch.empty((len(steps), k, outs.shape[1]), dtype=torch.float64)
    for s, h in enumerate(steps):
        diff = pairs[s, 0] - pairs[s, 1]
        numerical[s] = diff.div_(2 * h)  # a Python float, in the output's dtype: the check's arithmetic
    return numerical


def _accumulate(stats, numerical: torch.Tensor, analytic: np.ndarray, columns, at: int, settings, keep: int) -> None:
    """Fold one chunk of columns into the block's per-step largest error, worst ratio and failing count."""
    n_steps, k, rows = numerical.shape
    if not k * rows:
        return
    a = torch.from_numpy(np.ascontiguousarray(analytic.T))  # column, row
    error = (numerical - a).abs_()
    bound = numerical.abs_().mul_(settings.rtol).add_(settings.atol)  # gradcheck's bound, in place
    fails = ~(error <= bound)  # NaN fails
    error.nan_to_num_(nan=math.inf)
    ratio = torch.div(error, bound, out=bound)
    flat_e, flat_r = error.view(n_steps, -1), ratio.view(n_steps, -1)
    stats["errors"] = np.maximum(stats["errors"], flat_e.amax(dim=1).numpy())
    stats["ratios"] = np.maximum(stats["ratios"], flat_r.nan_to_num(nan=math.inf).amax(dim=1).numpy())
    stats["failing"] += fails.view(n_steps, -1).sum(dim=1).numpy()
    if not keep:
        return
    at_eps = flat_e[at]
    for flat in torch.topk(at_eps, min(keep, at_eps.numel())).indices.tolist():
        c, r = divmod(flat, rows)
        item = (float(at_eps[flat]), r, int(columns[c]), error[:, c, r].tolist(), float(analytic[r, c]))
        if len(stats["worst"]) < keep:
            heapq.heappush(stats["worst"], item)
        elif item[0] > stats["worst"][0][0]:
            heapq.heapreplace(stats["worst"], item)


def _overall(run: SweepRun, directional: DirectionalTaylorTest, blocks: list[BlockSweep], dtype: str) -> BlockSweep:
    """The whole Function: all inputs moved at once, judged with the worst of the swept blocks."""
    rows = sum(run.outputs[i].numel() for i in run.out_indices)
    cols = sum(run.args[j].numel() for j in run.in_indices)
    b = taylor_block(
        run.steps, *directional.overall(run.tracker), output=-1, input=-1, title="all outputs / all inputs",
        shape=(rows, cols),
    )  # fmt: skip
    judge_overall(b, blocks, run.steps, run.settings, dtype)
    return b


def _quiet(tracker: Progress) -> Progress:
    """The tracker's Cancel without its progress counts (the analytic rows are not sweep units)."""
    return Progress(0, None, tracker.cancel)


