"""A worker that stopped answering: each client's own deadline, and the end of the worker's tree.

The worker enforces a request's time limit and a Cancel itself, and answers within about a
second (the run's stack dump). But user code can stop the worker (``os.kill(os.getppid(),
signal.SIGSTOP)``) or wedge it, and then no answer ever comes. So both clients (the CLI's and the
window's) keep a deadline of their own: the request's timeout plus ``GRACE_S``, or ``GRACE_S``
after a Cancel. Past it the worker is killed with every process below it (frozen first, so
nothing forks past the kill), the request fails with a clear error, and the next request starts a
fresh worker. A stopped process acts on no signal but SIGKILL (and SIGCONT): SIGTERM waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any

from gradviz.protocol.process_tree import kill_tree, parent_of
from gradviz.schema.errors import ErrorKind

GRACE_S = 5.0  # past a request's timeout (or a Cancel): the worker needs ~1 s for the stack dump


def answer_deadline(sent_at: float, timeout: float | None, grace: float = GRACE_S) -> float | None:
    """When a request sent at ``sent_at`` (to a ready worker) must have been answered; None: never."""
    return sent_at + float(timeout) + grace if timeout else None


def unresponsive_error(kind: ErrorKind, timeout: float | None, grace: float = GRACE_S) -> dict[str, Any]:
    """The error a request ends with when the client had to replace the worker (kind timeout or cancelled)."""
    if kind == ErrorKind.CANCELLED:
        what = f"Cancelled. The gradviz worker did not stop the run within {grace:g} s of the cancel"
    else:
        what = f"The Function's code did not finish within {timeout:g} s, and the gradviz worker did not stop it"
    return {
        "kind": kind.value,
        "message": (
            f"{what}: it stopped responding (its code stopped or wedged it), so it was killed with every "
            "process it started. Nothing was checked; the next run starts a fresh worker."
        ),
        "worker_replaced": True,
    }


def wake(pid: int) -> None:
    """SIGCONT: a stopped worker can then act on a quit or SIGTERM (no-op for a running one)."""
    if pid and _is_our_child(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)


def end_worker(pid: int) -> list[int]:
    """Kill the worker ``pid`` (still our child, not yet reaped) and every process below it.

    Stopped or not: SIGSTOP then SIGKILL reach it either way. The pids killed; nothing when
    ``pid`` is no longer our child (reaped, and perhaps reused by another process).
    """
    if not pid or not _is_our_child(pid):
        return []
    killed = kill_tree(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # its session's group too: where /proc cannot be read
    return killed


def _is_our_child(pid: int) -> bool:
    parent = parent_of(pid)
    return parent == os.getpid() if parent is not None else not os.path.isdir("/proc")
