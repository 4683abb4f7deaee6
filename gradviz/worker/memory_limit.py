"""How much memory a run may use: one answer for the worker that enforces it, the memory
request that refuses a study too large for it, and the CLI that refuses it before starting one.

Its own small module, below the supervisor and the handlers, so neither imports the other for it.
"""

from __future__ import annotations

import math
import os

from gradviz.protocol.launch import MEMORY_ENV

MEMORY_SHARE = 0.75  # of physical RAM a run may use by default
NO_LIMIT = ("inf", "+inf", "infinity", "unlimited", "none", "nolimit", "no limit")  # MEMORY_ENV values that mean no limit


def default_memory_limit() -> int:
    """The most a run may use: MEMORY_ENV in MB (0, a negative number or one of ``NO_LIMIT``:
    no limit), else a share of physical RAM (also for a value that is not a number)."""
    value = os.environ.get(MEMORY_ENV, "").strip()
    if value.lower() in NO_LIMIT:
        return 0
    try:
        megabytes = float(value) if value else math.nan
    except ValueError:
        megabytes = math.nan
    if math.isfinite(megabytes):
        return max(0, min(int(megabytes * 2**20), 2**63 - 1))
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * MEMORY_SHARE)
    except (ValueError, OSError, AttributeError):
        return 0
