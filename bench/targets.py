"""One line per benchmark target, in one form, so ``make bench`` can list them all at the end.

Every target is a ratio measured in the same run against a peer; the line says the load the
machine had, since a ratio taken beside other work is not one taken on an idle machine.
"""

from __future__ import annotations

import os

PREFIX = "target:"


def load() -> str:
    """The 1-minute load average against the number of cores, for the record."""
    try:
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:  # Windows
        return f"{os.cpu_count()} cores"


def report(what: str, ratio: float, limit: float, *, at_most: bool = True, where: str = "") -> bool:
    """Print ``target: WHAT = RATIO <= LIMIT (WHERE): holds`` and say whether it holds."""
    holds = ratio <= limit if at_most else ratio >= limit
    place = f" ({where})" if where else ""
    sign = "<=" if at_most else ">="
    print(
        f"{PREFIX} {what} = {ratio:.2f} {sign} {limit:g}{place}: {'holds' if holds else 'MISSED'} [{load()}]",
        flush=True,
    )
    return holds
