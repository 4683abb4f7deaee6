"""Kinks: failing cells where the function has no derivative for the central difference to find.

At a kink (``|x|`` at 0, relu, max, sort ties, round) the one-sided differences disagree:
``(f(x+h) - f(x)) / h`` and ``(f(x) - f(x-h)) / h`` approach different slopes, and the central
difference is their average, a number no backward has to produce. A smooth function with a lot
of curvature disagrees too, by ``h·f''``, but that gap halves with the step; a kink's does not
(it stays, or vanishes once the half step no longer reaches it). So a failing cell is marked
when, at the check's eps,

    jump(h) = |D+(h) - D-(h)| > atol + rtol·max(|D+|, |D-|)   and above the round-off of D±,
    jump(h/2) / jump(h) or jump(h/4) / jump(h/2) is outside [0.3, 0.7]   (a smooth gap halves: 0.5)

The third step catches a kink near x rather than at it: at distance d = h/3 the gap at h and
h/2 is (1 - d/h)·Δ and (1 - 2d/h)·Δ, a ratio of exactly 0.5, and only at h/4 does it vanish.
With this window no distance d < h passes both ratios; round-off moves them by under 0.1 where
the gap is ROUNDOFF_FACTOR times above it.

Marks explain a failure; they never change it: a marked cell still fails when gradcheck's rule
fails it. ``jitter_inputs`` moves inputs off such points for a re-run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import call_apply, chunk_length
from gradviz.core.perturb import PerturbedForward
from gradviz.schema.results import BlockComparison
from gradviz.schema.settings import MACHINE_EPS, CheckSettings

MAX_KINK_COLUMNS = 2048  # failing columns probed per input; beyond that the marks are partial
ROUNDOFF_FACTOR = 16.0  # D± are trusted this far above their round-off, eps_machine·|f| / h
HALVES = (0.3, 0.7)  # a smooth function's one-sided gap halves with the step: ratios inside are not kinks
NOISE_POINTS = 4  # the round-off probe evaluates f at x + k·τ·v, k = -NOISE_POINTS … NOISE_POINTS
NOISE_STEP = 1 / 64  # τ as a fraction of the check's eps: far below it, so f is a parabola there
NOISE_TO_MACHINE = 5.0  # a value rounded to machine eps ε scatters by about ε/5 around its parabola
COARSER = 256.0  # measured round-off this many times the dtype's: the forward computes in a coarser dtype


def mark_kinks(
    apply: Callable,
    args: Sequence,
    blocks: Sequence[BlockComparison],
    settings: CheckSettings,
    *,
    clone_inputs: bool = False,
    cancel: Callable[[], None] | None = None,
    machine: dict[int, float] | None = None,
) -> None:
    """Set ``block.kinks`` (a bool map, True: non-differentiable here) on every failing block.

    ``machine``: the relative round-off of each output, as ``forward_machine_eps`` measured it; the
    output dtype's machine eps where absent. A forward that computes in float32 inside a float64
    Function rounds like float32, and its noise must not be read as kinks.
    """
    failing = [b for b in blocks if b.n_failing and b.analytic.size]
    for j in sorted({b.input for b in failing}):
        mine = [b for b in failing if b.input == j]
        columns = np.flatnonzero(np.logical_or.reduce([b.failing.any(axis=0) for b in mine]))[:MAX_KINK_COLUMNS]
        forward = PerturbedForward(
            apply, args, j, [b.output for b in mine], clone_inputs=clone_inputs, batched=settings.batched
        )
        for b in mine:
            b.kinks = np.zeros(b.shape, dtype=bool)
        h = settings.eps
        steps = (h, -h, h / 2, -h / 2, h / 4, -h / 4)
        k = chunk_length(len(steps) * forward.row_bytes, len(columns), settings.chunk_bytes)
        for c0 in range(0, len(columns), k):
            if cancel is not None:
                cancel()
            chunk = columns[c0 : c0 + k]
            outs = forward(forward.shifted(chunk, steps))
            for b in mine:
                ref = forward.reference[b.output]
                eps_machine = max(_dtype_machine_eps(ref.dtype), (machine or {}).get(b.output, 0.0))
                marks = _kink_columns(outs[b.output], ref, len(chunk), h, settings, eps_machine)
                b.kinks[:, chunk] = marks & b.failing[:, chunk]


def _kink_columns(
    outs: torch.Tensor, f0: torch.Tensor, n: int, h: float, settings: CheckSettings, machine: float
) -> np.ndarray:
    """``(rows, n)`` marks from the outputs at x±h, x±h/2, x±h/4 of n columns."""
    f = outs.double().cpu().numpy().reshape(6, n, -1).transpose(0, 2, 1)  # step, row, column
    base = f0.double().cpu().numpy().reshape(-1, 1)
    plus, minus, half_plus, half_minus, quarter_plus, quarter_minus = f
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        forward, backward = (plus - base) / h, (base - minus) / h
        jump = np.abs(forward - backward)
        half = np.abs((half_plus - base) / (h / 2) - (base - half_minus) / (h / 2))
        quarter = np.abs((quarter_plus - base) / (h / 4) - (base - quarter_minus) / (h / 4))
        bound = settings.atol + settings.rtol * np.maximum(np.abs(forward), np.abs(backward))
        roundoff = ROUNDOFF_FACTOR * machine * (np.abs(plus) + np.abs(base) + np.abs(minus)) / h
        ratio = half / np.where(jump > 0, jump, 1.0)
        ratio2 = quarter / np.where(half > 0, half, 1.0)
        not_halving = (ratio < HALVES[0]) | (ratio > HALVES[1]) | (ratio2 < HALVES[0]) | (ratio2 > HALVES[1])
        marks = (jump > bound) & (jump > roundoff) & not_halving
    return np.nan_to_num(marks, nan=False).astype(bool)


def _dtype_machine_eps(dtype: torch.dtype) -> float:
    return MACHINE_EPS.get(str(dtype).removeprefix("torch."), MACHINE_EPS["float64"])


def forward_machine_eps(
    apply: Callable, args: Sequence, in_indices: Sequence[int], out_indices: Sequence[int], eps: float, seed: int
) -> dict[int, float]:
    """The relative round-off each output really carries, measured: ``{output: machine eps}``.

    The output's dtype says how finely it *could* round; a forward that computes in float32 and
    returns float64 rounds like float32. Along one random direction v (all differentiable inputs
    at once) f is evaluated at x + k·τ·v, τ far below eps: there f is a parabola to many digits,
    so what a quadratic fit leaves is round-off. Its median over entries, relative to |f|, times
    NOISE_TO_MACHINE is the machine eps the forward behaves as. Only outputs that round COARSER
    times worse than their dtype are listed (the fit's own rounding is a few ulps); a few entries
    on a kink do not move the median. 2·NOISE_POINTS + 1 forwards.
    """
    generator = torch.Generator(device="cpu").manual_seed((seed + 2) % 2**63)
    tau = eps * NOISE_STEP
    ks = np.arange(-NOISE_POINTS, NOISE_POINTS + 1, dtype=float)
    rows: dict[int, list[np.ndarray]] = {i: [] for i in out_indices}
    try:  # the check's own forwards say what fails; here only the estimate is lost
        directions = {
            j: torch.randn(args[j].shape, generator=generator, dtype=torch.float64)
            * (1 + args[j].detach().double().abs().cpu())
            for j in in_indices
        }
        outs_by_step = forwards_along(apply, args, in_indices, directions, ks * tau)
    except (Exception, SystemExit):
        return {}
    for outs in outs_by_step:
        for i in out_indices:
            rows[i].append(outs[i].detach().double().cpu().reshape(-1).numpy())
    found = {}
    for i in out_indices:
        f = np.stack(rows[i])  # step, entry
        if not np.all(np.isfinite(f)):
            f = np.where(np.isfinite(f), f, 0.0)
        fit = np.polynomial.polynomial.polyfit(ks, f, 2)
        residual = f - np.polynomial.polynomial.polyval(ks, fit).T
        spread = np.sqrt(np.mean(residual**2, axis=0))
        size = np.abs(f[NOISE_POINTS])
        keep = np.isfinite(spread) & (size > 0)
        relative = float(np.median(spread[keep] / size[keep])) if np.any(keep) else 0.0
        if NOISE_TO_MACHINE * relative >= COARSER * _dtype_machine_eps(outs_by_step[0][i].dtype):
            found[i] = NOISE_TO_MACHINE * relative
    return found


def rounds_like(machine: float) -> str:
    """The dtype whose machine eps is nearest (in decades) to a measured one."""
    return min(MACHINE_EPS, key=lambda name: abs(np.log(MACHINE_EPS[name] / machine)))


def forwards_along(apply: Callable, args: Sequence, in_indices, directions, moves) -> list[tuple]:
    """The outputs at x + t·v for each t in ``moves``.

    Every tensor is a fresh copy for each call, the ones not moved too: the args are the caller's
    own tensors, and a forward that writes into one (a counter, a cache) must not change them.
    """
    found = []
    with torch.no_grad():
        for t in moves:
            call = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
            for j in in_indices:
                x = args[j].detach()
                call[j] = (x.double() + float(t) * directions[j].to(x.device)).to(x.dtype)
            found.append(call_apply(apply, call, clone=False))
    return found


def kink_hint(block: BlockComparison, in_name: str) -> str | None:
    """One sentence when failing cells of ``block`` are marked as kinks."""
    if block.kinks is None:
        return None
    marked = int(np.count_nonzero(block.kinks & block.failing))
    if not marked:
        return None
    if marked == block.n_failing:
        every = "Every failing cell sits"
    else:
        every = f"{marked} of the {block.n_failing} failing cells {'sits' if marked == 1 else 'sit'}"
    return (
        f"{every} at a kink of the forward (its one-sided differences disagree: |x| at 0, relu, max, a tie "
        f"in sort, round): the function is not differentiable there, so the numerical value is only the "
        f"average of two slopes. Re-draw {in_name} away from the kink (jitter) to check the backward."
    )


def jitter_inputs(inputs: PreparedInputs, size: float, seed: int) -> PreparedInputs:
    """Move each differentiable input element by ±size·(1 + |x|)·u, u uniform in [0.5, 1], seeded.

    The move is many eps wide, so the central difference of the next check no longer straddles a
    kink the inputs sat on (a zero of |x|, a tie of sort). The user's RNG is untouched.
    """
    generator = torch.Generator(device="cpu").manual_seed(seed % 2**63)
    args = list(inputs.args)
    for j in inputs.grad_indices:
        x = args[j].detach()
        u = torch.rand(x.shape, generator=generator, dtype=torch.float64) * 0.5 + 0.5
        sign = torch.randint(0, 2, x.shape, generator=generator, dtype=torch.int64) * 2 - 1
        move = (sign * u * size * (1 + x.double().abs().cpu())).to(device=x.device, dtype=x.dtype)
        moved = x.clone()
        moved.add_(move)
        args[j] = moved.requires_grad_(True)
    notes = [
        *inputs.notes,
        f"Inputs were moved by up to {size:g}·(1+|x|) per element (jitter), away from kinks and ties.",
    ]
    return PreparedInputs(tuple(args), inputs.names, notes)
