"""An eps sweep's result, as plain data: why a check fails, measured.

Two kinds of curve against the finite-difference step h (largest first):

- the directional Taylor test of one random direction v (weighted by a random w on the outputs):
  ``remainder(h) = |w·(f(x + h v) - f(x)) - h wᵀJ v|`` falls like h² when the backward's J is right
  and like h when it is wrong; ``curvature(h) = |w·(f(x+hv) - 2 f(x) + f(x-hv))|`` falls like h²
  where f is smooth and like h at a kink. One forward per step: any input size.
- the Jacobian sweep of a block: the central-difference Jacobian at every step against the
  analytic one (largest |n - a|, the worst ratio to gradcheck's bound, failing cells), and the
  curves of its worst cells: slope 2 where truncation dominates (eps too large), slope -1 where
  round-off does (eps too small).

NumPy and the standard library only: every front-end reads the same types.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, overload

from gradviz.schema.strict_json import decode_optional, encode_optional, stored, stored_if_there


class Verdict(StrEnum):
    """What a sweep says about a block (or a whole Function), most serious first."""

    BACKWARD_WRONG = "backward_wrong"
    NON_DIFFERENTIABLE = "non_differentiable"
    PRECISION = "precision"  # the backward is right, but no step passes in this dtype
    EPS_TOO_SMALL = "eps_too_small"  # round-off
    EPS_TOO_LARGE = "eps_too_large"  # truncation
    INCONCLUSIVE = "inconclusive"
    BACKWARD_RIGHT = "backward_right"

    @property
    def headline(self) -> str:
        return _HEADLINES[self]

    @property
    def severity(self) -> int:
        return list(Verdict).index(self)


_HEADLINES = {
    Verdict.BACKWARD_WRONG: "backward wrong",
    Verdict.NON_DIFFERENTIABLE: "non-differentiable near this point",
    Verdict.PRECISION: "backward right; precision too low for these tolerances",
    Verdict.EPS_TOO_SMALL: "backward right; eps too small (round-off)",
    Verdict.EPS_TOO_LARGE: "backward right; eps too large (truncation)",
    Verdict.INCONCLUSIVE: "inconclusive",
    Verdict.BACKWARD_RIGHT: "backward right",
}

# What an eps change can fix: the window offers "re-run at the suggested eps" for these.
EPS_FIXABLE = (Verdict.EPS_TOO_SMALL, Verdict.EPS_TOO_LARGE)
SWEEP_FAILED = "The eps sweep could not run: {why}"  # the worker's warning and the window's message


def jitter_for(eps: float) -> float:
    """How far to move inputs off a kink for a check at ``eps``: many steps wide, at most 0.1."""
    return min(0.1, max(1e-3, 100 * eps))


def _out(value: float | None) -> float | str | None:
    return encode_optional(value)


@overload
def _in(value: float | str) -> float: ...
@overload
def _in(value: None) -> None: ...
def _in(value: float | str | None) -> float | None:
    return decode_optional(value)


def _outs(values: list[float] | None) -> list[float | str | None] | None:
    return None if values is None else [_out(float(v)) for v in values]


@overload
def _ins(values: list[float | str]) -> list[float]: ...
@overload
def _ins(values: None) -> None: ...
def _ins(values: list[float | str] | None) -> list[float] | None:
    """A list ``_outs`` wrote (never null inside), as floats; None stays None."""
    return None if values is None else [_in(v) for v in values]


@dataclass
class CellCurve:
    """One Jacobian cell's |n(h) - a| at every step."""

    row: int
    col: int
    label: str  # out0[2,1] / x[2,1]
    analytic: float
    errors: list[float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "col": self.col,
            "label": self.label,
            "analytic": _out(self.analytic),
            "errors": _outs(self.errors),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellCurve:
        return cls(data["row"], data["col"], data["label"], _in(data["analytic"]), _ins(data["errors"]))


@dataclass
class BlockSweep:
    """The sweep of one (output, input) block; output = input = -1 for the whole Function."""

    output: int
    input: int
    title: str  # "out0 / x", or "all outputs / all inputs"
    shape: tuple[int, int]  # the block's rows x cols (the whole Jacobian's for the aggregate)
    remainder: list[float]  # directional Taylor remainder per step
    curvature: list[float]  # directional second difference per step
    floor: float  # round-off level of both: points within 10x of it carry no slope
    remainder_slope: float | None  # fitted at the smallest steps above the floor; None: all at the floor
    curvature_slope: float | None
    errors: list[float] | None = None  # largest |n(h) - a| per step; None: not swept cell by cell
    ratios: list[float] | None = None  # largest |n(h) - a| / (atol + rtol |n(h)|); <= 1 passes
    failing: list[int] | None = None  # cells outside gradcheck's bound per step (of the swept columns)
    columns: int | None = None  # columns swept at every step (fewer than the block's for wide inputs)
    cells: list[CellCurve] = field(default_factory=list)  # the worst cells at the check's eps
    truncation_slope: float | None = None  # slope of ``errors`` above the best step
    roundoff_slope: float | None = None  # ... and below it
    best_eps: float | None = None
    verdict: Verdict = Verdict.INCONCLUSIVE
    message: str = ""

    @property
    def swept(self) -> bool:
        """Swept cell by cell (not only along one direction)."""
        return self.errors is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "input": self.input,
            "title": self.title,
            "shape": list(self.shape),
            "remainder": _outs(self.remainder),
            "curvature": _outs(self.curvature),
            "floor": _out(self.floor),
            "remainder_slope": _out(self.remainder_slope),
            "curvature_slope": _out(self.curvature_slope),
            "errors": _outs(self.errors),
            "ratios": _outs(self.ratios),
            "failing": self.failing,
            "columns": self.columns,
            "cells": [c.to_dict() for c in self.cells],
            "truncation_slope": _out(self.truncation_slope),
            "roundoff_slope": _out(self.roundoff_slope),
            "best_eps": self.best_eps,
            "verdict": str(self.verdict),
            "headline": self.verdict.headline,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockSweep:
        return cls(
            **stored(data, "output", "input", "title"),
            **stored_if_there(data, "failing", "columns"),
            shape=tuple(data["shape"]),
            remainder=_ins(data["remainder"]),
            curvature=_ins(data["curvature"]),
            floor=_in(data["floor"]),
            remainder_slope=_in(data.get("remainder_slope")),
            curvature_slope=_in(data.get("curvature_slope")),
            errors=_ins(data.get("errors")),
            ratios=_ins(data.get("ratios")),
            cells=[CellCurve.from_dict(c) for c in data.get("cells", [])],
            truncation_slope=_in(data.get("truncation_slope")),
            roundoff_slope=_in(data.get("roundoff_slope")),
            best_eps=data.get("best_eps"),
            verdict=Verdict(data.get("verdict", Verdict.INCONCLUSIVE)),
            message=data.get("message", ""),
        )


@dataclass
class SweepResult:
    """Every block's sweep, the whole Function's, and one verdict with the eps to use."""

    function: str
    device: str
    dtype: str
    steps: list[float]  # largest first; the check's eps is one of them
    eps: float  # the check's settings the verdict speaks about
    atol: float
    rtol: float
    blocks: list[BlockSweep]
    overall: BlockSweep
    verdict: Verdict
    message: str
    best_eps: float | None  # one step for the whole Function (None: no step passes, or not swept)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    path: str = "batched"  # how the perturbed forwards ran: "batched" (vmap) or "loop"

    def block(self, output: int, input: int) -> BlockSweep | None:
        return next((b for b in self.blocks if b.output == output and b.input == input), None)

    @property
    def eps_index(self) -> int:
        """Position of the check's eps among the steps."""
        return min(range(len(self.steps)), key=lambda k: abs(math.log(self.steps[k] / self.eps)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "device": self.device,
            "dtype": self.dtype,
            "steps": list(self.steps),
            "eps": self.eps,
            "atol": self.atol,
            "rtol": self.rtol,
            "blocks": [b.to_dict() for b in self.blocks],
            "overall": self.overall.to_dict(),
            "verdict": str(self.verdict),
            "headline": self.verdict.headline,
            "message": self.message,
            "best_eps": self.best_eps,
            "notes": list(self.notes),
            "seconds": round(self.seconds, 6),
            "path": self.path,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepResult:
        return cls(
            function=data["function"],
            device=data["device"],
            dtype=data["dtype"],
            steps=list(data["steps"]),
            eps=data["eps"],
            atol=data["atol"],
            rtol=data["rtol"],
            blocks=[BlockSweep.from_dict(b) for b in data["blocks"]],
            overall=BlockSweep.from_dict(data["overall"]),
            verdict=Verdict(data["verdict"]),
            message=data["message"],
            best_eps=data.get("best_eps"),
            notes=list(data.get("notes", [])),
            seconds=data.get("seconds", 0.0),
            path=data.get("path", "batched"),
        )
