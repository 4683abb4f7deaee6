"""Precision: a check in float32, float16 or bfloat16 that failed, re-checked on a float64 copy.

The answer to "is my backward wrong, or is it the arithmetic?": the same Function and inputs in
float64 under gradcheck's defaults. Passing there means the low-precision failure is a
tolerance/eps problem; failing there too means a real bug. It explains, never changes, the
verdict of the check it belongs to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gradviz.schema.settings import DTYPE_DEFAULTS

PRECISION_ONLY, REAL_BUG, KINKS_ONLY, UNKNOWN = "precision", "real_bug", "kinks_only", "unknown"


@dataclass
class PrecisionCheck:
    dtype: str  # what the failing check ran in
    n_failing: int  # cells failing there
    n_cells: int
    float64_failing: int | None  # cells failing in the float64 copy; None when it could not be checked
    float64_cells: int
    eps: float  # the float64 re-check's settings (gradcheck's defaults)
    atol: float
    rtol: float
    error: str | None = None  # why the float64 copy could not be checked
    only_at_kinks: bool = False  # every float64 failure sits at a kink of the forward (core/diagnosis.py decides)

    @property
    def verdict(self) -> str:
        if self.float64_failing is None:
            return UNKNOWN
        if not self.float64_failing:
            return PRECISION_ONLY
        return KINKS_ONLY if self.only_at_kinks else REAL_BUG

    @property
    def message(self) -> str:
        own = DTYPE_DEFAULTS.get(self.dtype)
        where = f"(eps={self.eps:g}, atol={self.atol:g}, rtol={self.rtol:g})"
        if self.verdict == UNKNOWN:
            return f"Fails in {self.dtype}; the float64 copy could not be checked: {self.error}"
        if self.verdict == KINKS_ONLY:
            return (
                f"Fails in float64 too, but only at kinks of the forward ({self.float64_failing:,} cells): neither "
                "a precision problem nor a wrong backward. Re-draw the inputs away from the kinks (jitter) to check "
                "the backward."
            )
        if self.verdict == REAL_BUG:
            return (
                f"Fails in float64 too ({self.float64_failing:,} of {self.float64_cells:,} cells with gradcheck's "
                f"defaults {where}): a real bug in the backward, not a precision problem."
            )
        advice = (
            f" Check in float64, or use {self.dtype}'s defaults (eps={own.eps:g}, atol={own.atol:g}, rtol={own.rtol:g})."
            if own
            else " Check in float64."
        )
        return (
            f"Fails only in {self.dtype}: {self.n_failing:,} of {self.n_cells:,} cells fail there, but the float64 "
            f"copy passes gradcheck's defaults {where}: a tolerance/eps problem, not your backward.{advice}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict, "message": self.message}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrecisionCheck:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
