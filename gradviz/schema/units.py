"""Sizes for people: one byte formatter for every front-end (binary units, IEC names)."""

from __future__ import annotations

UNITS = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))


def format_bytes(n: float) -> str:
    """``1536 -> '1.5 KiB'``, ``768 -> '768 B'``: the largest unit that keeps the number >= 1."""
    n = float(n)
    unit, size = UNITS[0]
    for name, scale in UNITS:
        if abs(n) >= scale:
            unit, size = name, scale
    if size == 1:
        return f"{int(n)} B"
    return f"{n / size:.1f} {unit}"
