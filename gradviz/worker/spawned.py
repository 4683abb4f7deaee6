"""``python -P -m gradviz.worker.spawned PIPE_FD FAULT_FD IMPORTED_FD``: a run process started fresh (spawn).

The worker starts it ahead of need (``start_method``). It becomes a run process at once (its own
process group, the fault file watched, so the dump signal dumps its stack even while it imports), reads
its stdin in a thread (the worker's write of a large request never waits on our import), imports
torch and, with ``GRADVIZ_WORKER_WARM=1``, pays the first-call costs as the worker does, and says
so on ``IMPORTED_FD`` (closing it). The worker starts it while the run before it still runs user
code, so until its order comes it is not dumpable: that code cannot read or write its memory. Then it waits for its order on stdin, a JSON object ``{"request", "key", "threads"}`` (the request as the client
sent it, parsed again here), and serves it like a forked run (``run.serve_one``). An empty stdin means the worker let it go: it exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading

from gradviz.protocol.launch import WARM_ENV
from gradviz.schema.requests import from_message
from gradviz.worker import containment, run


def _read_all(fd: int, into: list[bytes]) -> None:
    while chunk := os.read(fd, 1 << 20):
        into.append(chunk)


def _stdin_empty() -> None:
    """User code reads an empty stdin, as in a forked run."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")


def main() -> None:
    pipe_fd, fault_fd, imported_fd = (int(arg) for arg in sys.argv[1:4])
    os.set_inheritable(fault_fd, False)  # as in a forked run: programs the run starts do not get it
    order_fd = os.dup(0)
    _stdin_empty()
    chunks: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(order_fd, chunks), daemon=True)
    reader.start()
    run.become_run_process(fault_fd, threads=1)
    containment.hide_self()  # a run's user code may be running beside us: our memory is closed to it
    if os.environ.get(WARM_ENV) == "1":
        from gradviz.worker.first_calls import warm_up

        warm_up()
    with contextlib.suppress(OSError):  # the worker stops listening once it handed a request over
        os.write(imported_fd, b"1")
    os.close(imported_fd)
    reader.join()
    os.close(order_fd)
    if not chunks:
        os._exit(0)
    containment.show_self()  # the run before us is gone; the worker reads our memory use
    order = json.loads(b"".join(chunks))
    envelope = from_message(order["request"])  # the worker parsed it once already: this cannot fail
    run.serve_one(envelope, pipe_fd, fault_fd, int(order["threads"]), bytes.fromhex(order["key"]), prepared=True)


if __name__ == "__main__":
    main()
