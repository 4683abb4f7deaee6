"""Is the process that owns a file still alive? A lock the OS drops when its holder dies.

A client's result folder and a window's recovery file each come with a lock file their owner
holds while it lives. Process ids cannot answer "is the owner alive" (containers reuse them);
a lock can: the kernel releases it when the holder exits, even by ``kill -9``, so a lock we can
take belongs to nobody alive. ``filelock`` (which torch already installs) holds it with
``flock`` on POSIX and ``LockFileEx`` on Windows, so nothing here imports ``fcntl``.

How filelock is used, and why (its documented behaviour, from 3.12 on):

- ``thread_local=False``: a lock is taken in one thread (a worker's callback, the GUI thread)
  and released in another; a thread-local context would think it unheld there.
- never ``is_singleton``: two ``FileLock`` objects for one path in one process must exclude
  each other, as two windows in one process do (flock locks are per open file, so they do).
- ``acquire(timeout=0)`` tries once and raises ``filelock.Timeout`` when someone holds it.
- release leaves the lock file in place on POSIX (deleting it would race a waiter) and
  removes it on Windows; callers that want it gone unlink it themselves while holding it.
- across ``fork``: the child shares the parent's open lock file, and filelock 3.x releases
  its locks when the child's interpreter exits, which would unlock the *parent's* hold
  (``flock`` locks belong to the open file both share). filelock 4 forgets a parent's holds in
  the child itself; for 3.x ``_forget_in_child`` does the same at fork, closing the child's copy
  without unlocking.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import filelock

_HELD: weakref.WeakSet[filelock.BaseFileLock] = weakref.WeakSet()  # locks this process holds
_FORK_HOOK: list[bool] = []  # whether the at-fork hook is in place (registered once, on first use)


class Held(Exception):
    """Another live process holds the lock."""


def take(path: Path, mode: int = 0o600) -> filelock.BaseFileLock:
    """Hold the lock at ``path`` (created if missing) until ``drop`` or this process ends.

    Raises ``Held`` when a live process holds it, OSError when it cannot be opened. (filelock is
    imported here, on first use: ``import gradviz`` and a check in the user's process need none.)"""
    import filelock

    if not _FORK_HOOK:
        _FORK_HOOK.append(True)
        if hasattr(os, "register_at_fork") and not hasattr(filelock.BaseFileLock, "_reset_after_fork_in_child"):
            os.register_at_fork(after_in_child=_forget_in_child)
    lock = filelock.FileLock(str(path), mode=mode, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        raise Held(str(path)) from None
    _HELD.add(lock)
    return lock


def drop(lock: filelock.BaseFileLock, *, delete: bool = False) -> None:
    """Release ``lock``; with ``delete``, its file goes too (unlinked while still held, so no
    other process is told "free" for a file about to vanish; Windows removes it on release)."""
    if delete:
        with contextlib.suppress(OSError):
            os.unlink(lock.lock_file)
    _HELD.discard(lock)
    with contextlib.suppress(OSError):
        lock.release(force=True)


def owner_alive(path: Path) -> bool:
    """Whether a live process holds the lock at ``path``. A missing file means no owner (nothing
    is created then); a file we may not open counts as alive (someone else's: leave it alone)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:  # not even allowed to look (another user's folder)
        return True
    try:
        drop(take(path))
    except Held:
        return True
    except OSError:
        return True
    return False


def _forget_in_child() -> None:
    """In a forked child: let go of the parent's holds without unlocking them (filelock 3.x)."""
    for lock in list(_HELD):
        context = getattr(lock, "_context", None)
        fd = getattr(context, "lock_file_fd", None)
        if context is None or fd is None:
            continue
        context.lock_file_fd = None
        context.lock_counter = 0
        with contextlib.suppress(OSError):
            os.close(fd)  # the parent's open file keeps the lock
    _HELD.clear()
