"""The sweep's verdict, read from its curves: NumPy only, no torch.

Given the Taylor remainders and the Jacobian sweep's errors at every step (``core/sweep.py``
measures them), each block gets a verdict, most telling first: a kink at the point ->
non-differentiable; remainder slope ≈ 1 where the check fails -> backward wrong; otherwise the
backward is right and the check's eps is compared with the bottom of the error valley: too
small, too large, fine, or no step passes at all (precision). Kept apart from the measuring so
the reading can be tested on curves typed in, without running any Function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gradviz.schema.settings import CheckSettings
from gradviz.schema.sweep import BlockSweep, Verdict

CLEAN = 10.0  # a remainder counts only this far above its floor
WINDOW_DECADES = 2.0  # slopes are fitted over the smallest clean steps spanning this many decades
SLOPE_SPLIT = 1.5  # below: slope ≈ 1 (wrong J, or a kink); above: slope ≈ 2
NO_EPS_HELPS = (Verdict.BACKWARD_WRONG, Verdict.NON_DIFFERENTIABLE, Verdict.INCONCLUSIVE)


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


def side_slope(steps: Sequence[float], errors: Sequence[float] | None, k0: int, k1: int) -> float | None:
    """Log-log slope of the errors at steps k0..k1 (one side of the valley); None: too few points."""
    if errors is None:
        return None
    h = np.asarray(steps[k0:k1], dtype=float)
    e = np.asarray(errors[k0:k1], dtype=float)
    ok = np.isfinite(e) & (e > 0)
    if ok.sum() < 2:
        return None
    return float(np.polyfit(np.log10(h[ok]), np.log10(e[ok]), 1)[0])


def classify(b: BlockSweep, steps: Sequence[float], settings: CheckSettings, dtype: str) -> None:
    """Fill ``best_eps``, the two error slopes, ``verdict`` and ``message`` of one block from its curves."""
    at = step_index(steps, settings.eps)
    passes_at_eps = None
    if b.ratios is not None:
        best = valley(b.ratios)
        if best is not None:
            b.best_eps = steps[best]
            # each side's slope from the four steps beyond the bottom, where one effect dominates
            b.truncation_slope = side_slope(steps, b.errors, max(0, best - 4), best)
            b.roundoff_slope = side_slope(steps, b.errors, best + 1, best + 5)
        passes_at_eps = bool(b.ratios[at] <= 1)
    slope = format_slope(b.remainder_slope)
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
    assert b.best_eps is not None  # some ratio is <= 1 here, so the valley has a bottom
    small = settings.eps < b.best_eps
    b.verdict = Verdict.EPS_TOO_SMALL if small else Verdict.EPS_TOO_LARGE
    side = b.roundoff_slope if small else b.truncation_slope
    cause = "round-off" if small else "truncation"
    b.message = (
        f"{b.title}: backward right ({right}); eps={settings.eps:g} is too {'small' if small else 'large'} "
        f"({cause}: the error {'rises' if small else 'grows'} with slope {format_slope(side)} there): "
        f"use eps={b.best_eps:g}."
    )


def taylor_block(
    steps: Sequence[float], remainder: list[float], curvature: list[float], floor: float, *, output: int,
    input: int, title: str, shape: tuple[int, int],
) -> BlockSweep:
    """A block's Taylor curves and their fitted slopes (the curvature's round-off floor is twice the
    remainder's); the Jacobian sweep's curves are added, and the block classified, after."""
    return BlockSweep(
        output=output,
        input=input,
        title=title,
        shape=shape,
        remainder=remainder,
        curvature=curvature,
        floor=floor,
        remainder_slope=fit_slope(steps, remainder, floor),
        curvature_slope=fit_slope(steps, curvature, 2 * floor),
    )


def judge_overall(
    overall: BlockSweep, blocks: list[BlockSweep], steps: Sequence[float], settings: CheckSettings, dtype: str
) -> None:
    """Classify the whole Function's curves, its Jacobian-sweep curves being the worst of the swept
    blocks' at each step (failing cells summed, the three worst cells at the check's eps kept)."""
    swept = [s for s in blocks if s.swept]
    if swept:
        overall.errors = np.asarray([s.errors for s in swept], dtype=float).max(axis=0).tolist()
        overall.ratios = np.asarray([s.ratios for s in swept], dtype=float).max(axis=0).tolist()
        overall.failing = np.asarray([s.failing for s in swept], dtype=np.int64).sum(axis=0).tolist()
        at = step_index(steps, settings.eps)
        overall.cells = sorted((c for s in swept for c in s.cells), key=lambda c: -c.errors[at])[:3]
    classify(overall, steps, settings, dtype)


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


def step_index(steps: Sequence[float], eps: float) -> int:
    return min(range(len(steps)), key=lambda k: abs(math.log(steps[k] / eps)))


def format_slope(slope: float | None) -> str:
    return "?" if slope is None else f"{slope:.2f}"


def flat_tail(steps: Sequence[float], values: Sequence[float]) -> float:
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

