"""Every process a run started, wherever it went: found, measured and stopped as one tree.

A process group is not enough to hold user code: a child started with ``setsid`` (or
``start_new_session=True``) leaves the group, a double-forked daemon is reparented away from the
run, and the run itself may move into another group. What user code cannot leave is ancestry:
while the worker is a *child subreaper* (Linux's ``PR_SET_CHILD_SUBREAPER``), every orphan below
it is reparented to it instead of to init, so "the worker's descendants" holds every process any
run ever started. This module reads that tree from ``/proc`` (no psutil needed), adds up its
memory, and kills it without giving it a chance to fork past the kill.

Elsewhere than Linux there is no ``/proc``: the functions see only the root, and callers keep
their process-group kill as well.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable

PR_SET_CHILD_SUBREAPER = 36
_PROC = "/proc"


def become_subreaper() -> bool:
    """Make orphans below this process ours (Linux); whether it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid`` from /proc (None when it is gone or unknown)."""
    stat = _stat_fields(pid)
    return int(stat[1]) if stat else None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # the command name is in parentheses and may itself hold spaces or parentheses
    return raw[raw.rfind(b")") + 2 :].decode("ascii", "replace").split()


def _all_parents() -> dict[int, int]:
    """pid -> parent pid for every process we can see."""
    parents = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return parents
    for name in names:
        if name.isdigit():
            stat = _stat_fields(int(name))
            if stat:
                parents[int(name)] = int(stat[1])
    return parents


def descendants(root: int) -> list[int]:
    """Every living process below ``root`` (not ``root`` itself), parents before children."""
    children: dict[int, list[int]] = {}
    for pid, parent in _all_parents().items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        below = [c for p in frontier for c in children.get(p, ()) if c != root]
        found.extend(below)
        frontier = below
    return found


def is_zombie(pid: int) -> bool:
    stat = _stat_fields(pid)
    return bool(stat) and stat[0] in ("Z", "X")


def tree_memory(root: int) -> int:
    """Bytes the tree at ``root`` holds in RAM.

    Alone, a process counts its resident set (cheap: /proc/PID/statm). With descendants, forked
    copies share pages with their parent, so resident sets would count torch's pages once per
    copy: each process then counts its proportional share (Pss), which adds up exactly.
    """
    below = descendants(root)
    if not below:
        return resident_bytes(root)
    return sum(proportional_bytes(pid) for pid in (root, *below))


def resident_bytes(pid: int) -> int:
    try:
        with open(f"{_PROC}/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def proportional_bytes(pid: int) -> int:
    """Pss of ``pid`` (its share of every page it maps); its resident set where unreadable."""
    try:
        with open(f"{_PROC}/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resident_bytes(pid)


def kill_tree(root: int, *, include_root: bool = True) -> list[int]:
    """SIGKILL ``root`` and everything below it; the pids signalled.

    The tree is frozen first (SIGSTOP, walked again until no new process appears), so nothing in
    it can fork a child the kill would miss; then each process is killed. Zombies are left for
    their parents (or for us, as subreaper) to reap.
    """
    stopped: set[int] = set()
    for _ in range(50):  # a fork bomb stops growing once its members are stopped
        members = ([root] if include_root else []) + descendants(root)
        new = [pid for pid in members if pid not in stopped]
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        stopped.update(new)
    _signal_all(stopped, signal.SIGKILL)
    return sorted(stopped)


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def reap_orphans(keep: Iterable[int] = ()) -> list[int]:
    """Reap this process's exited children except ``keep`` (whose status someone still wants).

    A subreaper inherits the zombies of orphans; ``waitpid(-1)`` would also take the status of
    a child the caller waits for by pid, so each is reaped by its own pid.
    """
    me, kept, reaped = os.getpid(), set(keep), []
    for pid, parent in _all_parents().items():
        if parent != me or pid in kept:
            continue
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                reaped.append(pid)
    return reaped
