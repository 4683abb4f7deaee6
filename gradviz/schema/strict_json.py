"""Strict JSON has no NaN or Infinity: a non-finite float travels as null and comes back as NaN."""

from __future__ import annotations

import math


def finite(value: float) -> float | None:
    """``value``, or None when it is NaN or infinite."""
    return value if math.isfinite(value) else None


def number(value: float | None) -> float:
    """The inverse of ``finite``, as far as JSON allows: null comes back as NaN."""
    return math.nan if value is None else float(value)
