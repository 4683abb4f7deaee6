"""Sizes for people: the one byte formatter of every front-end (binary units, IEC names).

The CLI's memory table (always KiB, so its rows line up), the memory plots (the unit of the
taller bar, three figures) and every message ("a 12.0 MiB file") call ``format_bytes``.
"""

from __future__ import annotations

Unit = tuple[str, int]  # ("MiB", 2**20)
UNITS: tuple[Unit, ...] = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))
KIB = UNITS[1]


def choose_unit(largest: float) -> Unit:
    """The biggest binary unit in which ``largest`` bytes is still at least 1 (B below 1 KiB)."""
    chosen = UNITS[0]
    for unit in UNITS:
        if abs(largest) >= unit[1]:
            chosen = unit
    return chosen


def format_bytes(n: float, unit: Unit | None = None, *, three_figures: bool = False) -> str:
    """``1536 -> '1.5 KiB'``, ``768 -> '768 B'``: in ``unit``, else the largest that keeps the
    number >= 1; one decimal, or about three significant figures (``1.15 MiB``, ``17.1 MiB``,
    ``384 KiB``) with ``three_figures``. Thousands are separated: ``1,536.0 KiB``."""
    name, size = unit if unit is not None else choose_unit(n)
    if size == 1:
        return f"{n:,.0f} B"
    v = n / size
    decimals = 1 if not three_figures else 2 if abs(v) < 10 else 1 if abs(v) < 100 else 0
    return f"{v:,.{decimals}f} {name}"
