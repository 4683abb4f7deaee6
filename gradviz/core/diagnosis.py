"""One diagnosis per failing block: why it fails, decided once and said the same way everywhere.

The pattern hints (``hints.py``), the kink probe (``kinks.py``), the float64 re-check
(``precision.py``), the forward's noise and the eps sweep each see part of the evidence. Read on
their own they contradicted each other: "fails only in float32 … not your backward" above "a term
is missing or wrong"; float32 round-off inside a float64 forward marked as kinks; a
straight-through estimator told that "a mask or slice is missing". Here the evidence is gathered
first, then each failing block gets one ``Cause``, most fundamental first:

1. NONDETERMINISTIC: two forwards on the same inputs differ by more than the check can tell apart.
2. PIECEWISE_CONSTANT: the forward does not move at small steps but jumps at large ones (round,
   sign, floor) while the backward passes a gradient: finite differences cannot judge it.
3. PRECISION: inputs in float32/16: the float64 copy of the block passes.
4. FORWARD_PRECISION: the forward rounds like a coarser dtype than it returns (measured), or
   returns a coarser dtype than its inputs (float32 out of float64 in), and the block passes with
   that dtype's eps and tolerances.
5. KINK: every failing cell sits at a kink, or a re-check (3, 4) still fails at the kinks only
   (a few at a kink and the rest unexplained: the kink hint leads the others).
6. BACKWARD: none of the above; confirmed by a re-check where one ran, else the pattern hints.

The block's hints, its kink marks and the run's warnings are rendered from that cause, and the
eps sweep asks the same probes (``explain_sweep``). A diagnosis explains a verdict; it never
changes one: gradcheck's rule alone decides pass or fail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import torch

from gradviz.core.inputs import PreparedInputs
from gradviz.core.kinks import forward_machine_eps, forwards_along, kink_hint, mark_kinks, rounds_like
from gradviz.core.precision import recheck_at_forward_precision, recheck_in_float64_blocks
from gradviz.schema.errors import Cancelled
from gradviz.schema.results import BlockComparison, CheckResult
from gradviz.schema.settings import MACHINE_EPS, CheckSettings, dtype_defaults
from gradviz.schema.sweep import BlockSweep, Verdict

# what a piecewise-constant forward does, said by the check's hint and by the sweep
FLAT_THEN_JUMPS = "does not move at small steps and jumps at larger ones"
STRAIGHT_THROUGH = "a straight-through estimator"
BACKWARD_WRONG = "the backward is wrong here."  # said where a block fails its re-check too
LARGE_MOVES = (0.1, 1.0, 10.0)  # the piecewise-constant probe's large steps, times (1 + |x|)
NOISE_SHARE = 0.1  # a nondeterministic forward's noise counts above this share of atol


class Cause(StrEnum):
    NONDETERMINISTIC = "nondeterministic"
    PIECEWISE_CONSTANT = "piecewise_constant"
    PRECISION = "precision"
    FORWARD_PRECISION = "forward_precision"
    KINK = "kink"
    BACKWARD = "backward"


# causes under which the backward is not to blame; the kink marks of such a block are cleared
NOT_THE_BACKWARD = (
    Cause.NONDETERMINISTIC,
    Cause.PIECEWISE_CONSTANT,
    Cause.PRECISION,
    Cause.FORWARD_PRECISION,
)


@dataclass
class Diagnosis:
    """Why one failing block fails: the cause, and the hints said for it."""

    output: int
    input: int
    cause: Cause
    hints: list[str] = field(default_factory=list)


@dataclass
class _Evidence:
    """What the probes found for the whole check, read by ``decide``."""

    nondeterministic: bool = False
    machine: dict[int, float] = field(default_factory=dict)  # output -> round-off, where coarser than dtype
    flat: dict[int, set[int]] = field(default_factory=dict)  # input -> outputs piecewise constant in it
    float64: dict[tuple[int, int], BlockComparison] = field(default_factory=dict)  # the float64 copy's blocks
    coarse: dict[tuple[int, int], BlockComparison] = field(default_factory=dict)  # re-checked at that dtype
    internal: str | None = None  # the dtype the forward rounds like, when coarser than its output's
    lower: dict[int, str] = field(default_factory=dict)  # output -> its dtype, where coarser than the inputs'
    dtype: str = "float64"  # the check's


def coarser_outputs(result: CheckResult) -> dict[int, str]:
    """The differentiable outputs whose dtype rounds coarser than the inputs checked (a float64
    Function that returns float32): ``{output: dtype}``."""
    finest = MACHINE_EPS.get(result.dtype)
    return {
        o.index: o.dtype
        for o in result.outputs
        if o.requires_grad and finest is not None and o.dtype in MACHINE_EPS and MACHINE_EPS[o.dtype] > finest
    }


OUTPUT_DTYPE_ROUNDOFF = (
    "These cells fail from {output}'s {low} round-off: forward returns {low} for {dtype} inputs (see the "
    "warning). With {low}'s eps={eps:g}, atol={atol:g}, rtol={rtol:g} this block passes, so the backward is "
    "right here; return {dtype} from forward to check it to {dtype}'s precision."
)


def is_nondeterministic(noise: float, settings: CheckSettings) -> bool:
    """Two forwards that differ by ``noise`` make the numerical Jacobian noise beyond what atol tolerates."""
    return noise > 0 and noise / (2 * settings.eps) > NOISE_SHARE * settings.atol


def explain_failures(
    fn: Any,
    inputs: PreparedInputs,
    settings: CheckSettings,
    result: CheckResult,
    check: Callable[..., CheckResult],
    *,
    clone_inputs: bool,
    noise: float,
    cancel: Callable[[], None] | None = None,
    cancel_flag: Any = None,
) -> list[Diagnosis]:
    """Probe, decide one cause per failing block, and render it into hints, kink marks and warnings.

    ``check`` is ``check_function`` (passed in: this module does not import its caller);
    ``noise`` the largest difference of two forwards on the same inputs.
    """
    failing = [b for b in result.blocks if b.n_failing]
    if not failing:
        return []
    args = inputs.args
    found = _Evidence(nondeterministic=is_nondeterministic(noise, settings), dtype=result.dtype)
    outs = sorted({b.output for b in failing})
    ins = sorted({b.input for b in failing})
    found.machine = forward_machine_eps(fn.apply, args, ins, outs, settings.eps, settings.seed)
    try:
        mark_kinks(
            fn.apply,
            args,
            result.blocks,
            settings,
            clone_inputs=clone_inputs,
            cancel=cancel,
            machine=found.machine,
        )
    except Cancelled:
        raise
    except (Exception, SystemExit):
        for b in result.blocks:
            b.kinks = None
    found.lower = {i: d for i, d in coarser_outputs(result).items() if i in outs}
    for i, dtype in found.lower.items():  # a float32 output rounds like float32, measured or not
        found.machine[i] = max(found.machine.get(i, 0.0), MACHINE_EPS[dtype])
    for j in {b.input for b in failing if _zero_where_failing(b)}:
        found.flat[j] = piecewise_constant(fn.apply, args, j, outs, settings.eps, settings.seed)
    undecided = [b for b in failing if _early_cause(b, found) is None]
    if undecided:
        precision, float64 = recheck_in_float64_blocks(
            fn, inputs, settings, result, check, cancel=cancel_flag
        )
        result.precision = precision
        if float64 is not None:
            found.float64 = {(b.output, b.input): b for b in float64.blocks}
    else:
        precision = None
    checked = None
    coarse = [found.machine[b.output] for b in undecided if b.output in found.machine]
    if coarse and not found.float64:
        internal = found.internal = rounds_like(max(coarse))
        checked = recheck_at_forward_precision(fn, inputs, settings, internal, check, cancel=cancel_flag)
        if checked is not None:
            found.coarse = {(b.output, b.input): b for b in checked.blocks}
    diagnoses = [decide(b, result.inputs[b.input].name, found, settings) for b in failing]
    wrong = any(d.cause is Cause.BACKWARD for d in diagnoses)
    if precision is not None:
        precision.only_at_kinks = bool(precision.float64_failing) and not wrong  # one message everywhere
        result.warnings.append(precision.message)
    if checked is not None and found.internal and not set(found.machine) <= set(found.lower):
        result.warnings.append(
            _forward_precision_warning(found.internal, found, settings, result, checked, wrong)
        )
    for b, d in zip(failing, diagnoses):
        b.hints = d.hints
        if d.cause in NOT_THE_BACKWARD and b.kinks is not None:
            b.kinks = np.zeros_like(b.kinks)
    return diagnoses


def decide(block: BlockComparison, in_name: str, found: _Evidence, settings: CheckSettings) -> Diagnosis:
    """The one cause of a failing block, and its hints."""
    key = (block.output, block.input)
    early = _early_cause(block, found)
    if early is Cause.NONDETERMINISTIC:
        return Diagnosis(*key, early, [
            "The forward is not deterministic (see the warning): these cells measure its randomness, not the "
            "backward. Fix the seed or remove the randomness, then check again."
        ])  # fmt: skip
    if early is Cause.PIECEWISE_CONSTANT:
        return Diagnosis(*key, early, [piecewise_constant_hint(in_name)])
    kinks = block.kinks if block.kinks is not None else np.zeros(block.shape, dtype=bool)
    copy = found.float64.get(key)
    coarse = found.coarse.get(key) if found.internal else None
    rechecked = copy if copy is not None else coarse
    kink = kink_hint(block, in_name)
    if rechecked is not None and rechecked.n_failing and not np.any(rechecked.failing & ~kinks) and kink:
        where = "in the float64 copy" if copy is not None else f"with {found.internal}'s eps and tolerances"
        return Diagnosis(*key, Cause.KINK, [
            kink,
            f"The other failing cells are round-off: {where} only the cells at the kink still fail.",
        ])  # fmt: skip
    if copy is not None and copy.passed:
        return Diagnosis(*key, Cause.PRECISION, [
            f"These cells fail from {found.dtype} round-off only: the float64 copy of this block passes "
            "gradcheck's defaults, so the backward is right here (see the warning)."
        ])  # fmt: skip
    if coarse is not None and coarse.passed and found.internal:
        tol = dtype_defaults(found.internal)
        if block.output in found.lower:
            return Diagnosis(*key, Cause.FORWARD_PRECISION, [OUTPUT_DTYPE_ROUNDOFF.format(
                output=f"out{block.output}", low=found.lower[block.output], dtype=found.dtype, eps=tol.eps,
                atol=tol.atol, rtol=tol.rtol,
            )])  # fmt: skip
        return Diagnosis(*key, Cause.FORWARD_PRECISION, [
            f"The forward computes in {found.internal} inside (measured: its output rounds like {found.internal}), "
            f"so at eps={settings.eps:g} its round-off swamps the finite differences. With {found.internal}'s "
            f"eps={tol.eps:g}, atol={tol.atol:g}, rtol={tol.rtol:g} this block passes: the failure comes from the "
            "forward's internal precision, not the backward."
        ])  # fmt: skip
    if kink and block.n_kinks == block.n_failing:
        return Diagnosis(*key, Cause.KINK, [kink])
    hints = list(block.hints)
    if copy is not None:
        hints = [f"Fails in float64 too: {BACKWARD_WRONG}", *(copy.hints or hints)]
    elif coarse is not None and found.internal:
        hints = [
            f"Fails with {found.internal}'s eps and tolerances too, where the forward's {found.internal} round-off "
            f"no longer matters: {BACKWARD_WRONG}",
            *(coarse.hints or hints),
        ]
    return Diagnosis(*key, Cause.BACKWARD, [kink, *hints] if kink else hints)


def _early_cause(block: BlockComparison, found: _Evidence) -> Cause | None:
    """The causes decided before any re-check: they make the re-checks pointless."""
    if found.nondeterministic:
        return Cause.NONDETERMINISTIC
    if block.output in found.flat.get(block.input, ()) and _zero_where_failing(block):
        return Cause.PIECEWISE_CONSTANT
    return None


def _zero_where_failing(block: BlockComparison) -> bool:
    """The numerical Jacobian is 0 on the whole block and the analytic one is not 0 where it fails."""
    return not np.any(block.numerical) and bool(np.all(block.analytic[block.failing] != 0))


def piecewise_constant(
    apply: Callable, args: Sequence, j: int, out_indices: Sequence[int], eps: float, seed: int
) -> set[int]:
    """The outputs that stay exactly still when input ``j`` moves by ±eps along a random direction,
    but change when it moves by LARGE_MOVES·(1 + |x|): a forward flat between jumps (round, sign,
    floor, a threshold). An output that never moves ignores the input instead: not listed.
    """
    generator = torch.Generator(device="cpu").manual_seed((seed + 3) % 2**63)
    moves = [0.0, eps, -eps, *LARGE_MOVES, *(-m for m in LARGE_MOVES)]
    try:  # the check's forwards say what fails; only the hint is lost here
        x = args[j].detach()
        direction = {
            j: torch.randn(x.shape, generator=generator, dtype=torch.float64) * (1 + x.double().abs().cpu())
        }
        if not bool(((x.double() + eps * direction[j].to(x.device)).to(x.dtype) != x).all()):
            return set()  # eps below the input's resolution: finite differences see 0 for that reason alone
        outs = forwards_along(apply, args, [j], direction, moves)
    except (Exception, SystemExit):
        return set()
    found = set()
    for i in out_indices:
        f = [o[i].detach() for o in outs]
        if any(not isinstance(v, torch.Tensor) or v.shape != f[0].shape for v in f):
            continue
        still = all(torch.equal(f[0], v) for v in f[1:3])
        jumps = any(not torch.equal(f[0], v) for v in f[3:])
        if still and jumps:
            found.add(i)
    return found


def piecewise_constant_hint(in_name: str) -> str:
    return (
        f"The forward is piecewise constant in {in_name} (round, sign, floor, a threshold): it "
        f"{FLAT_THEN_JUMPS}, so its numerical Jacobian is 0 almost everywhere, while the backward passes a "
        f"gradient by design ({STRAIGHT_THROUGH}). Finite differences cannot "
        "validate such a backward at any eps: these cells fail whatever it returns. gradcheck fails it too; "
        "judge the surrogate gradient on its own terms (e.g. against the smooth function it stands for)."
    )


def _forward_precision_warning(
    internal: str,
    found: _Evidence,
    settings: CheckSettings,
    result: CheckResult,
    checked: CheckResult,
    wrong: bool,
) -> str:
    """The run's warning for a forward that rounds like ``internal``: what was measured, and what
    the re-check at ``internal``'s tolerances says about the backward."""
    tol = dtype_defaults(internal)
    worst = max(found.machine.values())
    where = f"(eps={tol.eps:g}, atol={tol.atol:g}, rtol={tol.rtol:g})"
    head = (
        f"The forward rounds like {internal}, not {result.dtype}: its outputs carry a relative round-off of "
        f"about {worst:.2g} (measured), which at eps={settings.eps:g} is up to {worst / settings.eps:.2g} × |f| "
        f"in the numerical Jacobian. It computes in {internal} inside."
    )
    n = sum(b.n_failing for b in checked.blocks)
    if n and wrong:
        return (
            f"{head} Re-checked with {internal}'s defaults {where}, {n:,} of {checked.n_cells:,} cells still fail: "
            "a real bug in the backward, not the forward's precision."
        )
    if n:
        return (
            f"{head} Re-checked with {internal}'s defaults {where}, only {n:,} cells at kinks of the forward still "
            "fail: the other failures are its round-off, not your backward."
        )
    return (
        f"{head} Re-checked with {internal}'s defaults {where}, every cell passes: the failure comes from the "
        f"forward's {internal} internals, not your backward. Compute the forward in {result.dtype}, or check with "
        "those tolerances."
    )


def explain_sweep(
    fn: Any, args: Sequence, blocks: list[BlockSweep], overall: BlockSweep, settings: CheckSettings, g: dict
) -> None:
    """Give a sweep block the check's diagnosis where a probe decides it: a piecewise-constant
    forward with a non-zero backward is non-differentiable for every step, never "backward wrong".

    ``g``: Jᵀw per (output, input), as the directional test computed it. ``overall`` (the whole
    Function) follows when every block is piecewise constant.
    """
    outs = sorted({b.output for b in blocks})
    flat: dict[int, set[int]] = {}
    for b in blocks:
        if b.input not in flat:
            flat[b.input] = piecewise_constant(fn.apply, args, b.input, outs, settings.eps, settings.seed)
        moved = g.get((b.output, b.input))
        if b.output in flat[b.input] and moved is not None and bool(torch.any(moved != 0)):
            _say_piecewise_constant(b)
    if blocks and all(b.message.startswith(f"{b.title}: {PIECEWISE}") for b in blocks):
        _say_piecewise_constant(overall)


PIECEWISE = "piecewise constant:"


def _say_piecewise_constant(b: BlockSweep) -> None:
    b.verdict = Verdict.NON_DIFFERENTIABLE
    b.message = (
        f"{b.title}: {PIECEWISE} the forward {FLAT_THEN_JUMPS}, while the backward passes a gradient "
        f"({STRAIGHT_THROUGH}): no step gives a derivative to compare it with."
    )


def machine_eps_for_sweep(
    fn: Any, args: Sequence, in_indices, out_indices, settings: CheckSettings, dtype_machine: float
) -> float:
    """The round-off the sweep's floor assumes: the dtype's, or the forward's measured one where coarser."""
    measured = forward_machine_eps(fn.apply, args, in_indices, out_indices, settings.eps, settings.seed)
    return max([dtype_machine, *measured.values()])
