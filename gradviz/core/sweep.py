"""The eps sweep: is the backward wrong, or the finite difference?

Two measurements, read together (PETSc's and dolfin-adjoint's Taylor tests, ADCME's remainder
plot):

1. Directional Taylor test. For random v (inputs) and w (outputs), with the step actually taken
   ``δ = (x + h v) - x`` (rounded in the input's dtype),

       remainder(h) = |w·(f(x + δ) - f(x)) - (Jᵀw)·δ|          Jᵀw: one call of the user's backward
       curvature(h) = |w·(f(x + δ⁺) - 2 f(x) + f(x + δ⁻)) - (Jᵀw)·(δ⁺ + δ⁻)|

   A right J leaves the h² term of Taylor's expansion (slope 2 on log-log axes); a wrong one
   leaves h·wᵀ(J_true - J)v (slope 1). The curvature is h² where f is smooth and h at a kink.
   Slopes are fitted at the smallest steps still clear of round-off; one forward per step.
2. Jacobian sweep of a block: the central-difference Jacobian at every step, computed as the
   check computes it, against the analytic block. Its error falls like eps² (truncation) and
   rises like 1/eps (round-off); the bottom of that valley is the eps to use.

The verdict per block, most telling first: a kink at the point -> non-differentiable; remainder
slope ≈ 1 where the check fails -> backward wrong; otherwise the backward is right and the
check's eps is compared with the valley: too small, too large, fine, or no step passes at all
(precision). The sweep explains a verdict; it never changes one.
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
from gradviz.core.vjp import vjp
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
from gradviz.schema.sweep import BlockSweep, CellCurve, SweepResult, Verdict
from gradviz.schema.units import format_bytes

FLOOR_FACTOR = 4.0  # round-off of w·f(x): FLOOR_FACTOR · machine eps · Σ|w||f|
CLEAN = 10.0  # a remainder counts only this far above its floor
WINDOW_DECADES = 2.0  # slopes are fitted over the smallest clean steps spanning this many decades
SLOPE_SPLIT = 1.5  # below: slope ≈ 1 (wrong J, or a kink); above: slope ≈ 2
NO_EPS_HELPS = (Verdict.BACKWARD_WRONG, Verdict.NON_DIFFERENTIABLE, Verdict.INCONCLUSIVE)
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
    tracker = Progress(units + 2 * len(steps) * (len(in_indices) + 1), progress, cancel)
    dtype_name = str(leaves[0].dtype).removeprefix("torch.")
    # the forward's measured round-off where coarser than its dtype's (float32 inside a float64 Function)
    machine = machine_eps_for_sweep(fn, args, in_indices, out_indices, settings, MACHINE_EPS.get(dtype_name, MACHINE_EPS["float64"]))
    generator = torch.Generator(device="cpu").manual_seed((settings.seed + 1) % 2**63)

    directional = _Directional(fn, args, outputs, out_indices, in_indices, steps, machine, generator, where, settings)
    analytic = _analytic_blocks(fn, outputs, swept, args, settings, tracker, where)

    blocks, paths, notes = [], set(), []
    by_input = {}
    for i, j in swept:
        by_input.setdefault(j, []).append(i)
    sweeps = {}
    for j, outs in by_input.items():
        found, path, note = _sweep_input(
            fn, args, j, outs, analytic, steps, settings, options, tracker, where, names, outputs, generator
        )
        sweeps.update(found)
        paths.add(path)
        if note:
            notes.append(note)
    for i, j in pairs:
        tracker.check_cancel()
        remainder, curvature, floor = directional.block(i, j, tracker)
        title = f"out{i} / {names[j]}"
        b = BlockSweep(
            output=i,
            input=j,
            title=title,
            shape=(outputs[i].numel(), args[j].numel()),
            remainder=remainder,
            curvature=curvature,
            floor=floor,
            remainder_slope=fit_slope(steps, remainder, floor),
            curvature_slope=fit_slope(steps, curvature, 2 * floor),
        )
        if (i, j) in sweeps:
            b.errors, b.ratios, b.failing, b.cells, b.columns = sweeps[i, j]
        classify(b, steps, settings, dtype_name)
        blocks.append(b)
    overall = _overall(directional, blocks, steps, settings, dtype_name, tracker, outputs, args, in_indices)
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


# --- reading the curves ----------------------------------------------------------------------


def fit_slope(steps: Sequence[float], values: Sequence[float], floor: float) -> float | None:
    """Log-log slope of ``values`` over its smallest steps clear of round-off; None: all at the floor.

    The clean points are those above ``CLEAN · floor`` (and finite); of the longest run of them,
    the fit uses the smallest steps spanning ``WINDOW_DECADES``, where Taylor's leading term rules.
    """
    h = np.asarray(steps, dtype=float)
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        clean = np.isfinite(v) & (v > CLEAN * floor) & (v > 0)
    runs, run = [], []
    for k in np.argsort(-h):  # largest step first
        if clean[k]:
            run.append(k)
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    if not runs:
        return None
    best = max(runs, key=len)
    smallest = h[best].min()
    window = [k for k in best if h[k] <= smallest * 10**WINDOW_DECADES]
    if len(window) < 2:
        window = best
    if len(window) < 2:
        return None
    x, y = np.log10(h[window]), np.log10(v[window])
    return float(np.polyfit(x, y, 1)[0])


def valley(ratios: Sequence[float]) -> int | None:
    """Index of the step at the bottom of the error valley: the lowest worst-of-its-neighbours ratio.

    Taking each step's worse neighbour into account puts the choice in the middle of a flat
    bottom rather than on its edge, so a slightly different input still passes.
    """
    r = np.asarray(ratios, dtype=float)
    r = np.where(np.isfinite(r), r, np.inf)
    if not r.size or not np.isfinite(r).any():
        return None
    padded = np.concatenate([[r[0]], r, [r[-1]]])
    worst = np.maximum(np.maximum(padded[:-2], padded[1:-1]), padded[2:])
    candidates = np.flatnonzero(worst == worst.min())
    return int(candidates[len(candidates) // 2])


def _side_slope(steps, errors, k0: int, k1: int) -> float | None:
    h = np.asarray(steps[k0:k1], dtype=float)
    e = np.asarray(errors[k0:k1], dtype=float)
    ok = np.isfinite(e) & (e > 0)
    if ok.sum() < 2:
        return None
    return float(np.polyfit(np.log10(h[ok]), np.log10(e[ok]), 1)[0])


def classify(b: BlockSweep, steps: Sequence[float], settings: CheckSettings, dtype: str) -> None:
    """Fill ``best_eps``, the two error slopes, ``verdict`` and ``message`` of one block from its curves."""
    at = _index_of(steps, settings.eps)
    passes_at_eps = None
    if b.ratios is not None:
        best = valley(b.ratios)
        if best is not None:
            b.best_eps = steps[best]
            # each side's slope from the four steps beyond the bottom, where one effect dominates
            b.truncation_slope = _side_slope(steps, b.errors, max(0, best - 4), best)
            b.roundoff_slope = _side_slope(steps, b.errors, best + 1, best + 5)
        passes_at_eps = bool(b.ratios[at] <= 1)
    slope = _fmt_slope(b.remainder_slope)
    kink = b.curvature_slope is not None and b.curvature_slope < SLOPE_SPLIT
    wrong = b.remainder_slope is not None and b.remainder_slope < SLOPE_SPLIT
    if kink:
        b.verdict = Verdict.NON_DIFFERENTIABLE
        b.message = (
            f"{b.title}: non-differentiable near this point: the second difference falls like h^"
            f"{b.curvature_slope:.2f} (a kink gives 1, a smooth function 2), so no step gives a derivative to "
            "compare with. Re-draw the inputs away from the kink."
        )
        return
    if wrong and passes_at_eps is not True:
        b.verdict = Verdict.BACKWARD_WRONG
        b.message = (
            f"{b.title}: backward wrong: the Taylor remainder falls like h^{slope} (right: 2, wrong: 1)"
            + (
                f" and no step brings the error within tolerance (best {min(b.ratios):.3g}× the bound)."
                if b.ratios is not None and min(b.ratios) > 1
                else "."
            )
        )
        return
    right = (
        f"the Taylor remainder falls like h^{slope}"
        if b.remainder_slope is not None
        else "the Taylor remainder stays within round-off at every step (f is linear along the test direction"
        + (")" if dtype == "float64" else f", or {dtype} too coarse to show its slope)")
    )
    if wrong:
        right = f"the error is within tolerance at eps={settings.eps:g}, though the Taylor remainder's slope {slope} shows a small discrepancy"
    if b.ratios is None:
        b.verdict = Verdict.BACKWARD_RIGHT
        b.message = f"{b.title}: backward right: {right}. (Not swept cell by cell: eps not judged.)"
        return
    if passes_at_eps:
        b.verdict = Verdict.BACKWARD_RIGHT
        b.message = f"{b.title}: backward right: {right}; the check's eps={settings.eps:g} passes (best {b.best_eps:g})."
        return
    if min(b.ratios) > 1 and b.remainder_slope is None:
        b.verdict = Verdict.INCONCLUSIVE
        b.message = (
            f"{b.title}: inconclusive: no step passes in {dtype} (best {min(b.ratios):.3g}× the bound at "
            f"eps={b.best_eps:g}) and the Taylor remainder stays within round-off, so its slope cannot tell a "
            "wrong backward from too little precision: check in float64."
        )
        return
    if min(b.ratios) > 1:
        b.verdict = Verdict.PRECISION
        b.message = (
            f"{b.title}: backward right ({right}), but no step passes in {dtype} with atol={settings.atol:g}, "
            f"rtol={settings.rtol:g} (best {min(b.ratios):.3g}× the bound at eps={b.best_eps:g}): check in float64 "
            "or loosen the tolerances."
        )
        return
    small = settings.eps < b.best_eps
    b.verdict = Verdict.EPS_TOO_SMALL if small else Verdict.EPS_TOO_LARGE
    side = b.roundoff_slope if small else b.truncation_slope
    cause = "round-off" if small else "truncation"
    b.message = (
        f"{b.title}: backward right ({right}); eps={settings.eps:g} is too {'small' if small else 'large'} "
        f"({cause}: the error {'rises' if small else 'grows'} with slope {_fmt_slope(side)} there): "
        f"use eps={b.best_eps:g}."
    )


def summarize(blocks: list[BlockSweep], overall: BlockSweep, settings: CheckSettings) -> tuple[Verdict, str]:
    """The Function's verdict: its most serious block's, with the one eps that suits every block."""
    worst = min(b.verdict.severity for b in blocks)
    verdict = Verdict(list(Verdict)[worst])
    named = [b for b in blocks if b.verdict == verdict]
    if verdict in (Verdict.BACKWARD_WRONG, Verdict.NON_DIFFERENTIABLE, Verdict.PRECISION, Verdict.INCONCLUSIVE):
        return verdict, " ".join(b.message for b in named)
    if overall.verdict in (Verdict.EPS_TOO_SMALL, Verdict.EPS_TOO_LARGE, Verdict.BACKWARD_RIGHT, Verdict.PRECISION):
        return overall.verdict, overall.message.replace(f"{overall.title}: ", "", 1)
    return verdict, " ".join(b.message for b in named)


def _index_of(steps: Sequence[float], eps: float) -> int:
    return min(range(len(steps)), key=lambda k: abs(math.log(steps[k] / eps)))


def _fmt_slope(slope: float | None) -> str:
    return "?" if slope is None else f"{slope:.2f}"


# --- the directional Taylor test -------------------------------------------------------------


class _Directional:
    """f along one random direction per input (and along all of them at once), at every step."""

    def __init__(self, fn, args, outputs, out_indices, in_indices, steps, machine, generator, where, settings) -> None:
        self.fn, self.args, self.steps, self.where = fn, list(args), list(steps), where
        self.batched = settings.batched
        self.out_indices, self.in_indices = out_indices, in_indices
        self.f0 = {i: outputs[i].detach().double().cpu().reshape(-1) for i in out_indices}
        self.v = {j: torch.randn(args[j].numel(), generator=generator, dtype=torch.float64) for j in in_indices}
        self.w = {i: torch.randn(outputs[i].numel(), generator=generator, dtype=torch.float64) for i in out_indices}
        self.machine = machine
        leaves = [args[j] for j in in_indices]
        self.g: dict[tuple[int, int], torch.Tensor] = {}
        for i in out_indices:  # Jᵀw for one output at a time: one call of the backward each
            grads = self._vjp([outputs[i]], leaves, [self.w[i]])
            for j, g in zip(in_indices, grads):
                self.g[i, j] = g
        every = self._vjp([outputs[i] for i in out_indices], leaves, [self.w[i] for i in out_indices])
        self.g_all = dict(zip(in_indices, every))
        self.cache: dict[int, tuple] = {}

    def _vjp(self, outs, leaves, ws) -> list[torch.Tensor]:
        grad_outputs = [w.to(dtype=o.dtype, device=o.device).view(o.shape) for o, w in zip(outs, ws)]
        try:
            grads = vjp(outs, leaves, grad_outputs, retain_graph=True)
        except (Exception, SystemExit) as exc:
            raise from_exception(ErrorKind.BACKWARD, exc, self.where, f"{self.fn.__name__}.backward") from None
        return [
            torch.zeros(x.numel(), dtype=torch.float64) if g is None else g.detach().double().cpu().reshape(-1)
            for g, x in zip(grads, leaves)
        ]

    def _moved(self, x: torch.Tensor, v: torch.Tensor, h: float) -> tuple[torch.Tensor, torch.Tensor]:
        """x + h v rounded in x's dtype (keeping its strides), and the step actually taken (float64)."""
        base = x.detach().double().cpu().reshape(-1)
        target = (base + h * v).to(dtype=x.dtype)
        moved = x.detach().clone()
        moved.copy_(target.view(x.shape).to(x.device))
        return moved, moved.detach().double().cpu().reshape(-1) - base

    def _outputs(self, j: int, tracker: Progress):
        """Outputs at x_j ± h v_j for every step (one vmapped call where the forward allows it)."""
        if j in self.cache:
            return self.cache[j]
        x = self.args[j]
        moves = [self._moved(x, sign * self.v[j], h) for h in self.steps for sign in (1, -1)]
        forward = PerturbedForward(self.fn.apply, self.args, j, self.out_indices, clone_inputs=True, batched=self.batched)
        try:
            outs = forward(torch.stack([m.detach().reshape(-1) for m, _ in moves]))  # C order, whatever the strides
        except (GradvizError, Cancelled):
            raise
        except (Exception, SystemExit) as exc:
            raise from_exception(
                ErrorKind.FORWARD, exc, self.where, f"{self.fn.__name__}.forward (on inputs moved along a test direction)"
            ) from None
        tracker.advance(len(moves))
        self.cache[j] = (outs, [d for _, d in moves])
        return self.cache[j]

    def block(self, i: int, j: int, tracker: Progress) -> tuple[list[float], list[float], float]:
        outs, deltas = self._outputs(j, tracker)
        f = outs[i].double().cpu()
        w, g, f0 = self.w[i], self.g[i, j], self.f0[i]
        return self._curves(f, w, f0, [(g, deltas)])

    def _curves(self, f: torch.Tensor, w, f0, terms) -> tuple[list[float], list[float], float]:
        wf0 = float(w @ f0)
        remainder, curvature = [], []
        for s in range(len(self.steps)):
            plus, minus = f[2 * s], f[2 * s + 1]
            linear_plus = sum(float(g @ d[2 * s]) for g, d in terms)
            linear_both = sum(float(g @ (d[2 * s] + d[2 * s + 1])) for g, d in terms)
            remainder.append(abs(float(w @ plus) - wf0 - linear_plus))
            curvature.append(abs(float(w @ plus) - 2 * wf0 + float(w @ minus) - linear_both))
        # rounding of each f_k adds up like a random walk: ‖w∘f‖₂, not Σ|w f|; the forward's own
        # rounding shows where the smallest steps' remainders lie flat
        floor = FLOOR_FACTOR * self.machine * (float(torch.linalg.vector_norm(w * f0)) + abs(wf0))
        floor = max(floor, _flat_tail(self.steps, remainder))
        return remainder, curvature, floor

    def overall(self, tracker: Progress) -> tuple[list[float], list[float], float]:
        """All inputs moved at once, all outputs weighted: the whole Function's Taylor test."""
        rows = []
        deltas = {j: [] for j in self.in_indices}
        with torch.enable_grad():
            for h in self.steps:
                for sign in (1, -1):
                    call = list(self.args)
                    for j in self.in_indices:
                        moved, d = self._moved(self.args[j], sign * self.v[j], h)
                        call[j] = moved.requires_grad_(self.args[j].requires_grad)
                        deltas[j].append(d)
                    try:
                        outputs = call_apply(self.fn.apply, call, clone=True)
                    except (Exception, SystemExit) as exc:
                        raise from_exception(
                            ErrorKind.FORWARD, exc, self.where, f"{self.fn.__name__}.forward (on inputs moved along a test direction)"
                        ) from None
                    rows.append(torch.cat([outputs[i].detach().double().cpu().reshape(-1) for i in self.out_indices]))
        tracker.advance(len(rows))
        f = torch.stack(rows)
        w = torch.cat([self.w[i] for i in self.out_indices])
        f0 = torch.cat([self.f0[i] for i in self.out_indices])
        return self._curves(f, w, f0, [(self.g_all[j], deltas[j]) for j in self.in_indices])


def _flat_tail(steps: Sequence[float], values: Sequence[float]) -> float:
    """The round-off level the smallest steps show, when they lie flat (slope under 0.5); else 0.

    Steps too small to move the input at all give exactly 0 and are left out.
    """
    h, v = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    keep = np.isfinite(v) & (v > 0)
    h, v = h[keep][-3:], v[keep][-3:]
    if len(h) < 3:
        return 0.0
    slope = np.polyfit(np.log10(h), np.log10(v), 1)[0]
    return float(np.median(v)) if abs(slope) < 0.5 else 0.0


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


def _analytic_blocks(fn, outputs, swept, args, settings, tracker, where) -> dict[tuple[int, int], np.ndarray]:
    """The analytic blocks to sweep, from the user's backward (batched where it allows)."""
    if not swept:
        return {}
    outs = sorted({i for i, _ in swept})
    ins = sorted({j for _, j in swept})
    try:
        jac = analytical_jacobian(
            outputs,
            outs,
            [args[j] for j in ins],
            ins,
            chunk_bytes=settings.chunk_bytes,
            progress=_quiet(tracker),
            batched=settings.batched,
        )
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.BACKWARD, exc, where, f"{fn.__name__}.backward") from None
    return {key: jac.blocks[key] for key in swept}


def _sweep_input(fn, args, j, outs, analytic, steps, settings, options, tracker, where, names, outputs, generator):
    """Every swept block of input j at every step: largest error, worst ratio, failing count, worst cells.

    Inputs with more than ``options.max_columns`` elements are swept on that many columns: the
    worst quarter at the check's eps (found by one central difference per column) and the rest
    drawn at random.
    """
    forward = PerturbedForward(fn.apply, args, j, outs, clone_inputs=True, batched=settings.batched)
    numel = args[j].numel()
    columns = np.arange(numel)
    if options.max_columns and numel > options.max_columns:
        columns = _choose_columns(fn, forward, outs, analytic, j, settings, options, tracker, where, generator)
    signed = [s for h in steps for s in (h, -h)]
    k = chunk_length(len(signed) * forward.row_bytes, len(columns), SWEEP_CHUNK_FACTOR * settings.chunk_bytes)
    n_steps = len(steps)
    at = _index_of(steps, settings.eps)
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
        found = _evaluate(fn, forward, chunk, signed, where)
        for i in outs:
            numerical = _central_differences(found[i], steps, len(chunk))
            _accumulate(stats[i], numerical, analytic[i, j][:, chunk], chunk, at, settings, options.worst_cells)
        tracker.advance(len(chunk) * len(signed))
    result = {}
    for i in outs:
        s = stats[i]
        cells = []
        for _, row, col, curve, a in sorted(s["worst"], reverse=True):
            out_idx, in_idx = cell_index(row, col, tuple(outputs[i].shape), tuple(args[j].shape))
            cells.append(CellCurve(row, col, cell_label(i, out_idx, names[j], in_idx), a, curve))
        result[i, j] = (s["errors"].tolist(), s["ratios"].tolist(), s["failing"].tolist(), cells, len(columns))
    return result, forward.path, forward.note


def sweep_units(numel: int, n_steps: int, options: SweepOptions) -> int:
    """Forward evaluations the Jacobian sweep of an input with ``numel`` elements costs."""
    if options.max_columns and numel > options.max_columns:
        return 2 * numel + 2 * n_steps * options.max_columns
    return 2 * n_steps * numel


def _choose_columns(fn, forward, outs, analytic, j, settings, options, tracker, where, generator) -> np.ndarray:
    """The worst quarter of input j's columns at the check's eps, and the rest at random."""
    numel = forward.values.numel()
    signed = [settings.eps, -settings.eps]
    worst = np.zeros(numel)
    k = chunk_length(len(signed) * forward.row_bytes, numel, SWEEP_CHUNK_FACTOR * settings.chunk_bytes)
    for c0 in range(0, numel, k):
        tracker.check_cancel()
        chunk = np.arange(c0, min(numel, c0 + k))
        found = _evaluate(fn, forward, chunk, signed, where)
        for i in outs:
            n = _central_differences(found[i], [settings.eps], len(chunk))[0]  # column, row
            a = torch.from_numpy(np.ascontiguousarray(analytic[i, j][:, chunk].T))
            ratio = (n - a).abs_().div_(n.abs().mul_(settings.rtol).add_(settings.atol)).nan_to_num_(nan=math.inf)
            worst[chunk] = np.maximum(worst[chunk], ratio.amax(dim=1).numpy())
        tracker.advance(len(chunk) * 2)
    m = options.max_columns
    chosen = np.argsort(-worst, kind="stable")[: max(1, m // 4)]
    rest = np.setdiff1d(np.arange(numel), chosen)
    drawn = rest[torch.randperm(len(rest), generator=generator)[: m - len(chosen)].numpy()]
    return np.sort(np.concatenate([chosen, drawn]))


def _evaluate(fn, forward: PerturbedForward, columns, signed, where) -> dict[int, torch.Tensor]:
    try:
        return forward(forward.shifted(columns, signed))
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        raise from_exception(
            ErrorKind.FORWARD, exc, where, f"{fn.__name__}.forward (on inputs perturbed by ±eps for the sweep)"
        ) from None


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


def _overall(directional, blocks, steps, settings, dtype, tracker, outputs, args, in_indices) -> BlockSweep:
    remainder, curvature, floor = directional.overall(tracker)
    rows = sum(outputs[i].numel() for i in directional.out_indices)
    cols = sum(args[j].numel() for j in in_indices)
    b = BlockSweep(
        output=-1,
        input=-1,
        title="all outputs / all inputs",
        shape=(rows, cols),
        remainder=remainder,
        curvature=curvature,
        floor=floor,
        remainder_slope=fit_slope(steps, remainder, floor),
        curvature_slope=fit_slope(steps, curvature, 2 * floor),
    )
    swept = [s for s in blocks if s.swept]
    if swept:
        b.errors = np.max([s.errors for s in swept], axis=0).tolist()
        b.ratios = np.max([s.ratios for s in swept], axis=0).tolist()
        b.failing = np.sum([s.failing for s in swept], axis=0).astype(int).tolist()
        cells = sorted((c for s in swept for c in s.cells), key=lambda c: -c.errors[_index_of(steps, settings.eps)])
        b.cells = cells[:3]
    classify(b, steps, settings, dtype)
    return b


def _quiet(tracker: Progress) -> Progress:
    """The tracker's Cancel without its progress counts (the analytic rows are not sweep units)."""
    return Progress(0, None, tracker.cancel)


