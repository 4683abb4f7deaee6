"""Everything a run starts stays below the worker, and goes when the run ends.

A process group does not hold user code: a child started with ``setsid`` leaves it, a
double-forked daemon is reparented away from the run, and the run itself may join another
group (even the worker's, where a ``killpg`` of the run's group misses it). What user code
cannot leave is ancestry: the worker makes itself a *child subreaper* at start, so every orphan
below it is reparented to the worker instead of to init, and "every process below the worker"
is everything any run started. At the end of each run, and when the worker stops, that whole
tree is frozen and killed (``process_tree.kill_tree``), then reaped with bounded waits: a
process stuck in the kernel never wedges the worker.

The run's stack dumps go to an anonymous file (memfd) shared by the worker and the run, so no
temporary folder exists for a killed worker to leave behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Collection

from gradviz.protocol import process_tree

REAP_WAIT_S = 5.0  # how long the killed processes get to disappear before the worker moves on


def hold_orphans() -> bool:
    """Make every orphan below this process ours (Linux); whether it took effect."""
    return process_tree.become_subreaper()


PR_SET_DUMPABLE = 4


def hide_self() -> bool:
    """Not dumpable (Linux): /proc/<our pid>/fd, mem and environ are then closed to every process
    of the same user without CAP_SYS_PTRACE, user code in the runs included (a forked run makes
    itself dumpable again, ``show_self``). Whether it took effect."""
    return _set_dumpable(0)


def show_self() -> bool:
    """Dumpable again: the worker measures a run's memory in /proc/<run pid>/smaps_rollup."""
    return _set_dumpable(1)


def _set_dumpable(value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_everything_below(run_pid: int | None = None, spare: Collection[int] = ()) -> list[int]:
    """Freeze and SIGKILL every process below this one but those in ``spare`` (a spawned run
    process that has never run user code, ``start_method``); the pids signalled.

    The run's own process group is killed too, by group id: where /proc does not exist that is
    all there is, and on Linux it costs nothing. Call it while the run is still unreaped (its
    zombie keeps the group id from being reused).
    """
    killed = process_tree.kill_tree(os.getpid(), include_root=False, spare=spare)
    if run_pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run_pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(run_pid, signal.SIGKILL)
    return killed


def reap_everything(run_pid: int | None = None, wait_s: float = REAP_WAIT_S, spare: Collection[int] = ()) -> bool:
    """Reap the killed run and every other child until none but ``spare`` are left below us, for
    at most ``wait_s``; whether everything went. A process in uninterruptible sleep does not die at once:
    it is left for a later ``process_tree.reap_exited``."""
    me, end = os.getpid(), time.monotonic() + wait_s
    while True:
        if run_pid is not None:
            try:
                if os.waitpid(run_pid, os.WNOHANG)[0]:
                    run_pid = None
            except ChildProcessError:  # reaped already
                run_pid = None
        process_tree.reap_exited(keep=spare)  # a spare that died is the starter's to reap
        left = [pid for pid in process_tree.descendants(me) if pid not in spare]
        if run_pid is None and not left:
            return True
        if time.monotonic() > end:
            print(f"gradviz: {len(left)} process(es) a run started did not end: {left[:10]}", file=sys.stderr)
            return False
        time.sleep(0.01)


def end_everything(run_pid: int | None = None, spare: Collection[int] = ()) -> None:
    """Kill and reap the whole tree below us but ``spare`` (the end of a run, or of the worker)."""
    kill_everything_below(run_pid, spare)
    if not reap_everything(run_pid, spare=spare):
        kill_everything_below(run_pid, spare)  # a process that was forking while we looked


def fault_file() -> int:
    """A descriptor of an anonymous file for a run's stack dumps, shared by the worker and the run
    across the fork: nothing on disk, so nothing to leave behind whatever kills the worker."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return os.memfd_create("gradviz-faults", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as f:  # removed from its folder at once where memfd is missing
        return os.dup(f.fileno())


def fault_size(fd: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return 0


def read_faults(fd: int, limit: int = 4 * 2**20) -> str:
    """What the run wrote to its fault file (the first ``limit`` bytes)."""
    try:
        return os.pread(fd, limit, 0).decode("utf-8", "replace")
    except OSError:
        return ""


def move_high(fd: int) -> int:
    """``fd`` moved to a high, close-on-exec number: programs the run starts do not inherit it, and
    code that tries the low descriptors one by one does not stumble on it. (POSIX modules are
    imported here: the CLI imports the supervisor's ``default_memory_limit`` on any platform.)"""
    import fcntl
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    floor = max(3, min(soft if soft > 0 else 1024, 1024) - 64)
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
    except OSError:
        return fd
    os.close(fd)
    return high


def close_all_but(keep: tuple[int, ...]) -> None:
    """In a forked run or spare: close every descriptor above stderr but ``keep`` (and the
    standard streams'). The worker's
    channels, the run beside it and a spare's order pipe are none of its business (user code that
    wrote into a spare's order pipe would crash the next run)."""
    streams = set()
    for stream in (sys.stdin, sys.stdout, sys.stderr):  # sys.stdin reads the worker's /dev/null
        with contextlib.suppress(AttributeError, OSError, ValueError):
            streams.add(stream.fileno())
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        if fd > 2 and fd not in keep and fd not in streams:
            with contextlib.suppress(OSError):
                os.close(fd)
