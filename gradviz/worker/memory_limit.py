"""How much memory a run may use: one answer for the worker that enforces it, the memory
request that refuses a study too large for it, and the CLI that refuses it before starting one.

Its own small module, below the supervisor and the handlers, so neither imports the other for it.
"""

from __future__ import annotations

import os

from gradviz.protocol.launch import MEMORY_ENV

MEMORY_SHARE = 0.75  # of physical RAM a run may use by default


def default_memory_limit() -> int:
    """The most a run may use: MEMORY_ENV in MB, else a share of physical RAM (0: no limit)."""
    value = os.environ.get(MEMORY_ENV)
    if value:
        try:
            return max(0, int(float(value) * 2**20))
        except ValueError:
            pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * MEMORY_SHARE)
    except (ValueError, OSError, AttributeError):
        return 0
