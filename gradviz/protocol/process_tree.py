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
import time
from collections.abc import Collection, Iterable

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
    raw = _read_small(f"{_PROC}/{pid}/stat")
    if raw is None:
        return None
    # the command name is in parentheses and may itself hold spaces or parentheses
    return raw[raw.rfind(b")") + 2 :].decode("ascii", "replace").split()


def _read_small(path: str) -> bytes | None:
    """A small /proc file in one read (os.open: a quarter of the cost of open() per process)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _all_parents() -> dict[int, int]:
    """pid -> parent pid for every process we can see."""
    parents = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return parents
    for name in names:
        if name.isdigit():
            raw = _read_small(f"{_PROC}/{name}/stat")
            if raw:
                fields = raw[raw.rfind(b")") + 2 :].split(None, 2)
                with contextlib.suppress(ValueError, IndexError):
                    parents[int(name)] = int(fields[1])
    return parents


def last_pid() -> int | None:
    """The pid the kernel handed out last, in our pid namespace (Linux's /proc/loadavg): while it
    stays the same, no process was created anywhere, so a tree read before is still whole."""
    raw = _read_small(f"{_PROC}/loadavg")
    try:
        return int(raw.split()[4]) if raw else None
    except (ValueError, IndexError):
        return None


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
    raw = _read_small(f"{_PROC}/{pid}/statm")
    try:
        return int(raw.split()[1]) * _PAGE if raw else 0
    except (ValueError, IndexError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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


def kill_tree(root: int, *, include_root: bool = True, spare: Collection[int] = ()) -> list[int]:
    """SIGKILL ``root`` and everything below it but the pids in ``spare``; the pids signalled.

    The tree is frozen first (SIGSTOP, walked again until no new process appears), so nothing in
    it can fork a child the kill would miss; then each process is killed. Zombies are left for
    their parents (or for us, as subreaper) to reap.
    """
    stopped: set[int] = set()
    for _ in range(50):  # a fork bomb stops growing once its members are stopped
        members = ([root] if include_root else []) + descendants(root)
        new = [pid for pid in members if pid not in stopped and pid not in spare]
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


class TreeMeter:
    """Memory of everything below ``root``, measured often and cheaply (the worker looks every 50 ms).

    Reading the whole process table costs about 12 us per process on the machine, so the tree is
    read again only when a process was created since the last read (``last_pid`` moved), at
    most every ``rescan_s``; in between, the members already known are measured, each by one
    small read. Resident sets are added up first; only when that sum is over the limit, and
    forked copies may be counting shared pages twice, is each member's Pss read (a walk of its
    page tables) to decide.
    """

    def __init__(self, root: int, *, include_root: bool = False, rescan_s: float = 0.2) -> None:
        self.root, self.include_root, self.rescan_s = root, include_root, rescan_s
        self.members: list[int] = []
        self._last_pid: int | None = None
        self._read_at = -1e9

    def refresh(self) -> list[int]:
        """The members, read again from /proc when processes were created since the last read."""
        now, newest = time.monotonic(), last_pid()
        if newest is None or (newest != self._last_pid and now - self._read_at >= self.rescan_s):
            self.members = ([self.root] if self.include_root else []) + descendants(self.root)
            self._last_pid, self._read_at = newest, now
        return self.members

    def over(self, limit: int, *, spare: Collection[int] = ()) -> int:
        """Bytes the tree holds, but the processes in ``spare``, when that is more than ``limit``, else 0."""
        members = [pid for pid in self.refresh() if pid not in spare]
        resident = sum(resident_bytes(pid) for pid in members)
        if resident <= limit:
            return 0
        if len(members) == 1:
            return resident
        shared = sum(proportional_bytes(pid) for pid in members)
        return shared if shared > limit else 0


def exit_status(pid: int) -> int | None:
    """How child ``pid`` ended (negative: the signal), or None while it runs; it is left unreaped,
    so its pid (and its process group's id) cannot be taken by a new process meanwhile."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def reap_exited(keep: Collection[int | None] = ()) -> list[int]:
    """Reap every exited child of ours but those in ``keep`` (whose status their owners still
    want), without reading /proc: ``waitid(WNOWAIT)`` names an exited child without reaping it.
    Stops early if a kept one is named (it hides the others until it is reaped)."""
    reaped = []
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if info is None or info.si_pid == 0 or info.si_pid in keep:
            return reaped
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)  # exited: does not block
            reaped.append(info.si_pid)


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): with the pid, it names one process for good."""
    stat = _stat_fields(pid)
    try:
        return int(stat[19]) if stat else None
    except (ValueError, IndexError):
        return None


def marked(name: str, value: str) -> list[int]:
    """Every living process whose environment (as it was when it started) holds ``name=value``.

    Ancestry is lost once the worker is gone (its orphans go to init); what every process below
    it carries is the environment it inherited, so that is what finds them. A process of another
    user, or a hidden one, cannot be read: it is not counted.
    """
    needle = b"\0" + f"{name}={value}".encode() + b"\0"
    found = []
    try:
        names = os.listdir(_PROC)
    except OSError:
        return found
    me = os.getpid()
    for entry in names:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"{_PROC}/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in b"\0" + environ and not is_zombie(int(entry)):
            found.append(int(entry))
    return found


def kill_marked(name: str, value: str, *, also: Iterable[int] = (), wait_s: float = 5.0) -> list[int]:
    """Freeze and SIGKILL every process ``marked(name, value)`` and the pids in ``also``, stopped
    ones included, until none is left (``wait_s`` at most); the pids killed."""
    killed: set[int] = set()
    extra = [pid for pid in also if pid]
    end = time.monotonic() + wait_s
    while True:
        stopped: set[int] = set()
        for _ in range(50):  # frozen first: nothing forks past the kill
            new = [pid for pid in (*extra, *marked(name, value)) if pid not in stopped]
            if not new:
                break
            _signal_all(new, signal.SIGSTOP)
            stopped.update(new)
        _signal_all(stopped, signal.SIGKILL)
        killed.update(stopped)
        extra = []
        if not stopped or time.monotonic() > end:
            return sorted(killed)
        time.sleep(0.01)
