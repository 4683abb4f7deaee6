"""Sizes and counts for people: the one byte formatter of every front-end (binary units, IEC
names), the one way a count meets its noun (``counted``: "1 leaf", "2 leaves"), and places
counted from 1 (``ordinal``: "2nd").

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


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with its noun in the number it takes: ``1 leaf``, ``0 leaves``, ``1,024 cells``.
    ``plural`` for a noun that does not just add an s (leaf: leaves, process: processes)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``: a place counted from 1, which no reader
    mistakes for a 0-based index."""
    tens = n % 100
    suffix = "th" if 11 <= tens <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
