"""``python -P -S -m gradviz.protocol.keeper NAME VALUE``: ends a worker's whole tree when its client cannot.

The worker ends everything its runs start (``gradviz.worker.containment``), but only while it
lives and is not stopped: user code can SIGKILL it (its orphans then go to init) or SIGSTOP it,
and the client that would step in can itself be killed. So each client starts this small
process first, in a session of its own; it runs no user code and imports no torch. Every process
below the worker carries ``NAME=VALUE`` in its environment (``launch.TREE_ENV``); the client
writes the worker's pid and start time on our stdin, then ``ok`` when it ended the worker
cleanly. When stdin ends without ``ok`` (the worker died or was replaced, or the client itself
died, even by ``kill -9``), the worker and every marked process are frozen and killed, stopped
ones included, and then we exit.
"""

from __future__ import annotations

import os
import signal
import sys

from gradviz.protocol import process_tree


def _read_all(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk


def _worker_pids(lines: list[str]) -> list[int]:
    """The worker named on stdin, if it is still that process (not a reused pid)."""
    pids = []
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            pid = int(parts[0])
            if process_tree.start_time(pid) == int(parts[1]):
                pids.append(pid)
    return pids


def main(argv: list[str]) -> int:
    name, value = argv[1], argv[2]
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # only the end of stdin ends us
    lines = _read_all(0).decode("ascii", "replace").splitlines()
    if "ok" not in lines:
        process_tree.kill_marked(name, value, also=_worker_pids(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
