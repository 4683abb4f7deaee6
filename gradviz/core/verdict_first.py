"""The verdict without the Jacobians: gradcheck's fast comparison at gradcheck's cost.

Two checks hold no Jacobian: one whose Jacobians would pass the memory limit (``large.too_large``)
and one asked for with ``fast_mode`` whose maps nobody has looked at yet. Both take their verdict
from ``torch.autograd.gradcheck(fast_mode=True)`` and gradcheck's other checks, run by name
(``verdict_checks``), and report failing cells found by bisection (``large.search_block``)
instead of every cell.

gradcheck's projections ``v^T J u`` allow an error of atol scaled by ``sum|u| sum|v|``, so a
backward wrong in a few cells can pass them. A fast check therefore adds one projection of the
whole Jacobian with its own weights (``screen``: one backward for every output, two forwards for
every input), on which a single wrong cell shows with at least its full error; only when it
disagrees, or gradcheck fails, are the blocks searched. The verdict stays gradcheck's: a cell the
search finds is a warning beside a passing verdict. The maps themselves are built on demand
(``maps_of``, ``attach_maps``), from the same inputs, exactly as an eager check builds them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import torch

from gradviz.core import checks
from gradviz.core.check_run import CheckRun
from gradviz.core.forward_jacobian import check_batched_forward_grad, check_undefined_forward_tangents
from gradviz.core.jacobian import CancelFn, Progress, ProgressFn, call_apply
from gradviz.core.large import MAX_CELLS, disagree, search_block
from gradviz.core.opcheck_checks import opcheck_outcomes
from gradviz.core.user_code import input_infos
from gradviz.core.vjp import vjp
from gradviz.schema.errors import SettingsError
from gradviz.schema.results import FAST_MODE, CheckOutcome, CheckResult, LargeBlock, TensorInfo
from gradviz.schema.settings import CheckSettings
from gradviz.schema.time_left import BLOCK_UNIT

MAP_POLICIES = ("eager", "failing", "deferred")  # check_function's ``maps``
FIRST_CELLS = 8  # cells a verdict-first check finds per block: the maps, built on demand, hold them all
FIRST_CELLS_ONLY = (
    "{block}: the first {count} wrong cells found, and the search stopped there; more may fail "
    "(the maps hold every cell: Report.blocks, or --save)."
)
CELLS_FOUND = (
    "gradcheck(fast_mode=True) passes, but {count:,} cell(s) fail the element-wise comparison (found by one more "
    "random projection and bisection, each cell then computed exactly): its projections v^T J u allow atol "
    "scaled by sum|u|·sum|v|. The verdict is fast mode's; run without fast_mode for the element-wise one."
)


def check_maps_policy(maps: str) -> None:
    if maps not in MAP_POLICIES:
        raise SettingsError(f"maps must be one of {', '.join(MAP_POLICIES)}, not {maps!r}.")


def applies(run: CheckRun) -> bool:
    """Whether a fast-mode check can give its verdict first: dense inputs (the screen perturbs
    them in place) and a backward to project."""
    return run.settings.fast_mode and all(x.layout == torch.strided for x in run.leaves)


def verdict_checks(run: CheckRun) -> list[CheckOutcome]:
    """gradcheck's verdict without its Jacobians: its fast comparison (which also tests
    reentrancy and grad_output scaling), then its other checks by name, in its order, so that
    the API's ``check_undefined_grad=False`` can drop the undefined-gradient tests as gradcheck does."""
    fn, args, settings = run.fn, run.args, run.settings
    names = [run.names[j] for j in run.in_indices]
    found = [checks.check_fast_mode(fn, args, settings, holds_jacobians=False, clone=run.mutates)]
    found += checks.vmap_rule_outcomes(run)
    if settings.check_backward_ad:
        if settings.check_batched_grad:
            found.append(checks.check_batched_grad(args, run.outputs, run.out_indices))
        if not settings.jacobian_only:
            count = sum(isinstance(o, torch.Tensor) and o.requires_grad for o in run.outputs)
            found.append(checks.check_undefined_output_grads(fn, args, run.in_indices, names, count=count))
    if settings.check_forward_ad:
        if not settings.jacobian_only:
            found.append(check_undefined_forward_tangents(fn.apply, args, [run.outputs[i] for i in run.out_indices]))
        if settings.check_batched_forward_grad:
            found.append(check_batched_forward_grad(fn.apply, args, settings.seed))
    if settings.check_backward_ad and not settings.jacobian_only:
        found += opcheck_outcomes(fn, args, counts=settings.opcheck == "fail")
    if settings.all_checks:
        found.append(checks.check_double_backward(fn, args, eps=settings.eps, atol=settings.atol, rtol=settings.rtol))
    return found


def screen(run: CheckRun) -> bool:
    """Whether one projection of the whole Jacobian disagrees by more than a wrong cell would make.

    Weights are random signs times 1 + U[0, 1): a single wrong cell enters with at least its full
    error, and two wrong cells cancel only if their weights happen to match to the error's
    precision (with plain signs, two cells of equal error cancel half the time)."""
    settings = run.settings
    outputs = [run.outputs[i] for i in run.out_indices]
    leaves = run.leaves
    shapes = tuple(tuple(t.shape) for t in (*outputs, *leaves))
    weights = [w if t.device.type == "cpu" else w.to(t.device) for w, t in zip(screen_weights(shapes, settings.seed), (*outputs, *leaves))]
    vs, us = weights[: len(outputs)], weights[len(outputs) :]
    grads = vjp(outputs, leaves, vs, retain_graph=True)  # the search below may project again
    analytic = sum(
        float(torch.dot(_flat64(g.to_dense() if g.layout != torch.strided else g), u.reshape(-1)))
        for g, u in zip(grads, us)
        if g is not None
    )
    numerical = sum(
        float(torch.dot(_flat64(p) - _flat64(m), v.reshape(-1)))
        for (p, m), v in zip(_outputs_along(run, us, settings.eps), vs)
    ) / (2 * settings.eps)
    terms = sum(o.numel() for o in outputs) * sum(x.numel() for x in leaves)
    return disagree(analytic, numerical, settings.tolerance(), terms)


def _flat64(t: torch.Tensor) -> torch.Tensor:
    flat = t.reshape(-1)
    return flat if flat.dtype == torch.float64 else flat.to(torch.float64)


@functools.lru_cache(maxsize=8)
def screen_weights(shapes: tuple[tuple[int, ...], ...], seed: int) -> tuple[torch.Tensor, ...]:
    """The screen's weights for tensors of these shapes, float64 on the CPU: random signs times
    1 + U[0, 1) from a generator seeded by ``seed`` (r in [0, 2): 1 + r below 1, else -r).

    A pure function of its arguments, so kept for the next check of the same shapes (each
    tensor of weights is read only)."""
    generator = torch.Generator().manual_seed(seed + 1)  # not the search's: independent vectors
    sizes = [math.prod(s) for s in shapes]
    r = torch.rand(sum(sizes), generator=generator, dtype=torch.float64) * 2
    flat = torch.where(r < 1, r + 1, -r)
    return tuple(part.view(shape) for part, shape in zip(flat.split(sizes), shapes))


def _outputs_along(run: CheckRun, us: list[torch.Tensor], eps: float) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The compared outputs with every input moved by +eps u, then by -eps u, at once, in the
    caller's own storage (gradcheck's way: the version counters stay untouched), then put back
    bitwise."""
    tensors = [x.data for x in run.leaves]
    originals = [x.clone() for x in tensors]
    found = []
    try:
        for step in (eps, -eps):
            with torch.no_grad():
                for x, original, u in zip(tensors, originals, us):
                    torch.add(original, u if u.dtype == x.dtype else u.to(x.dtype), alpha=step, out=x)
            with torch.enable_grad():
                outputs = call_apply(run.fn.apply, run.args, clone=run.mutates)
            # owned before the inputs are put back (an output of a forward that mutates may be one)
            found.append([outputs[i].detach().clone() if run.mutates else outputs[i].detach() for i in run.out_indices])
    finally:
        with torch.no_grad():
            for x, original in zip(tensors, originals):
                x.copy_(original)
    return list(zip(*found))


def check_without_jacobians(
    run: CheckRun,
    out_infos: list[TensorInfo],
    name: str | None = None,
    *,
    why: str | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> CheckResult:
    """A check that holds no Jacobian: gradcheck's verdict first, then the wrong cells found.

    Args:
        run: the check after its first forward.
        out_infos: its outputs, described.
        name: what the user calls the Function.
        why: the Jacobians are too large to hold, and why (every block is then searched); None:
            a fast-mode check whose maps are deferred (blocks searched only where the screen
            or gradcheck disagrees).
        progress, cancel: as for ``check_function``.

    Returns:
        The result: ``blocks`` empty, ``large_blocks`` the cells found, ``deferred_maps`` for a
        fast-mode check whose maps can be built on demand.
    """
    fn, args, settings, inputs = run.fn, run.args, run.settings, run.inputs
    start = time.perf_counter()
    blocks = [(i, j) for i in run.out_indices for j in run.in_indices] if settings.check_backward_ad else []
    tracker = Progress(max(1, len(blocks)), progress, cancel, unit=BLOCK_UNIT)  # one per block screened
    found_checks = verdict_checks(run)
    tracker.check_cancel()
    fast_failed = any(c.failed for c in found_checks if c.name in (FAST_MODE, "fast_projection"))
    search = why is not None or (blocks and (fast_failed or screen(run)))
    found: list[LargeBlock] = []
    most = MAX_CELLS if why is not None else FIRST_CELLS
    for i, j in blocks:
        if search:
            tracker.check_cancel()
            found.append(search_block(
                fn.apply, args, run.outputs[i], i, j, settings.tolerance(), clone_inputs=run.mutates,
                seed=settings.seed, max_cells=most, progress=tracker,
            ))  # fmt: skip
        else:
            found.append(LargeBlock(i, j, tuple(run.outputs[i].shape), tuple(args[j].shape)))
        tracker.advance(1)
    stopped = [_stopped(b, inputs.names[b.input], deferred=why is None) for b in found if not b.complete]
    leaf = args[run.in_indices[0]]
    result = CheckResult(
        function=name or fn.__name__,
        device=str(leaf.device),
        dtype=str(leaf.dtype).removeprefix("torch."),
        inputs=input_infos(inputs),
        outputs=out_infos,
        blocks=[],
        settings=settings,
        warnings=[w for w in (why, *stopped) if w],
        notes=list(inputs.notes),
        checks=found_checks,
        analytic_path="projections",
        numerical_path="projections",
        large_blocks=found,
        deferred_maps=why is None,
    )
    cells = sum(len(b.cells) for b in found)
    if result.passed and cells and settings.fast_mode:
        result.warnings.append(CELLS_FOUND.format(count=cells))
    result.seconds = {"total": time.perf_counter() - start}
    return result


def _stopped(block: LargeBlock, name: str, *, deferred: bool) -> str:
    """Why a block's search said no more: its cell cap (verdict first) or its call budget."""
    title = f"out{block.output} / {name}"
    if deferred and len(block.cells) >= FIRST_CELLS:
        return FIRST_CELLS_ONLY.format(block=title, count=len(block.cells))
    return f"{title}: the search stopped after {block.probes} calls; more cells may fail."


def maps_settings(settings: CheckSettings) -> CheckSettings:
    """The settings that build a fast-mode check's maps and nothing else: its Jacobians, their
    comparison and what explains it, never a second run of the checks that gave the verdict
    (gradcheck's fast mode draws new random vectors each time)."""
    return dataclasses.replace(
        settings,
        fast_mode=False,
        jacobian_only=True,
        all_checks=False,
        check_batched_grad=False,
        check_batched_forward_grad=False,
        check_vmap_rule=False,
    )


def attach_maps(result: CheckResult, maps: CheckResult) -> None:
    """Give a verdict-first ``result`` the blocks of ``maps`` (its Jacobians built eagerly, see
    ``maps_settings``); the verdict, its checks and notes stay ``result``'s.

    Where the maps could not be held either (``maps`` searched its blocks too), ``result``
    keeps its cells found."""
    if not maps.blocks and not maps.forward_blocks:
        result.deferred_maps = False
        return
    searched = {  # what the search said of its cells: the maps say it of every cell now
        CELLS_FOUND.format(count=sum(len(b.cells) for b in result.large_blocks)),
        *(_stopped(b, result.inputs[b.input].name, deferred=True) for b in result.large_blocks if not b.complete),
    }
    own = [w for w in result.warnings if w not in searched]
    result.blocks, result.forward_blocks, result.large_blocks = maps.blocks, maps.forward_blocks, []
    result.analytic_path, result.numerical_path = maps.analytic_path, maps.numerical_path
    result.warnings = [*own, *maps.warnings, *checks.fast_mode_warnings(result.checks, result.n_failing)]
    result.precision = result.precision or maps.precision
    result.seconds = {**result.seconds, "maps": maps.seconds.get("total", 0.0)}
    result.deferred_maps = False
