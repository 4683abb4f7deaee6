"""What one process holds, read from /proc: open files, threads, child processes, resident memory."""

from __future__ import annotations

import os
from pathlib import Path

from tests.worker_display import HELPER_PIDS


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_file_targets() -> list[str]:
    """What each open file descriptor points at (a path, ``pipe:[...]``, ``socket:[...]``,
    ``anon_inode:[eventfd]``...), sorted: a failing count says what the extra ones are."""
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the descriptor listdir itself used, closed by now
            continue
    return sorted(targets)


def thread_names() -> list[str]:
    """The name of each thread of this process (Qt names its threads: ``QThread``, ``Thread (pooled)``...)."""
    names = []
    for comm in Path("/proc/self/task").glob("*/comm"):
        try:
            names.append(comm.read_text().strip())
        except OSError:
            continue
    return sorted(names)


def threads() -> int:
    return int(_status("Threads"))


def rss_mib() -> float:
    return int(_status("VmRSS").split()[0]) / 1024


KEEPER_MODULE = b"gradviz.protocol.keeper"  # each worker's keeper: a child of ours beside it


def children(*, keepers: bool = False) -> int:
    """Live (not zombie) processes whose parent is this one, less the X display and window
    manager a pytest-xdist worker started for itself (tests/worker_display.py): the workers, or
    with ``keepers`` the keepers that watch them."""
    me, count = str(os.getpid()), 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            keeper = KEEPER_MODULE in (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z" and int(stat.parent.name) not in HELPER_PIDS and keeper == keepers:
            count += 1
    return count


def snapshot() -> dict[str, float]:
    return {
        "open files": open_files(),
        "threads": threads(),
        "workers": children(),
        "keepers": children(keepers=True),
        "RSS MiB": rss_mib(),
    }


def _status(key: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return line.split(":", 1)[1].strip()
    raise KeyError(key)
