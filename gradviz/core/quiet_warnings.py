"""Warnings silenced around gradviz's own calls, leaving the caller's filters as they were.

``warnings.catch_warnings`` saves and restores the one process-wide filter list, so two threads
inside it at once restore each other's copies: four threads calling ``gradviz.check`` together
left an ``ignore`` filter in the caller's ``warnings.filters`` for good. Here one shared entry is
put in front while any thread needs it (counted under a lock) and taken out, by identity, when
the last one is done; nothing else in the list is touched.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_users = 0
_entry: tuple | None = None


def _mutated() -> None:
    """Tell the warnings module its filters changed (its cache of "already warned" is stale)."""
    changed = getattr(warnings, "_filters_mutated", None) or getattr(warnings, "_filters_mutated_lock_held", None)
    if changed is not None:
        changed()


@contextmanager
def warnings_ignored() -> Iterator[None]:
    """Every warning ignored inside the block (vmap's performance notes, gradcheck's own), from
    any number of threads at once; the caller's filters are as they were once all have left."""
    global _users, _entry
    with _LOCK:
        _users += 1
        if _users == 1:
            _entry = ("ignore", None, Warning, None, 0)
            warnings.filters.insert(0, _entry)
            _mutated()
    try:
        yield
    finally:
        with _LOCK:
            _users -= 1
            if _users == 0:
                for k, entry in enumerate(warnings.filters):
                    if entry is _entry:
                        del warnings.filters[k]
                        break
                _entry = None
                _mutated()
