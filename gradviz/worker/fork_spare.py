"""A pre-forked spare run process (Linux, fork): forked from the worker ahead of need, it pays a
run's first-call costs before its request comes, then serves it exactly as a freshly forked run.

A freshly forked run starts OpenMP's thread pool on its first parallel op, faults in every page
of heap it touches and pays its first batched (vmapped) call: 10-30 % of a check of 10^5 cells
or more. The spare does all of that while the worker waits for a request (it is forked only
while no run works, whose CPU it would take): it starts the thread pool with the run's thread count, faults in a heap as large as
the last run used, in blocks the size of the finite differences' chunk buffers (glibc keeps such
blocks on the heap and keeps up to ``MAX_HEAP_BYTES`` of its free top: ``protocol.launch``'s
runtime environment), so the run's chunks reuse pages already faulted in, and runs one tiny
batched check. It has never run user code: it is a copy of the worker, which never does. Until its order
comes it is not dumpable (the run beside it runs user code of the same user) and holds none of
the worker's descriptors but its own four. The order, ``{"request", "key", "threads"}`` as
JSON, comes on a pipe only the worker holds; the pipe closed without one lets it go.
"""

from __future__ import annotations

import contextlib
import json
import os

from gradviz.schema.requests import from_message

MAX_HEAP_BYTES = 240 << 20  # under glibc's trim threshold (256 MiB in the runtime environment)
BLOCK_BYTES = 16 << 20  # under its mmap threshold (32 MiB): served from the heap, kept when freed
PARALLEL_SIDE = 256  # a matmul this size runs in parallel on every thread: the pool starts


def serve_when_ordered(pipe_fd: int, fault_fd: int, order_fd: int, warmed_fd: int, threads: int, heap_bytes: int) -> None:
    """In the forked spare: warm up, say so on ``warmed_fd``, wait for the order on ``order_fd``,
    serve it. Never returns."""
    from gradviz.worker import containment, run

    try:
        run.become_run_process(fault_fd, threads)
        containment.hide_self()  # become_run_process showed us: not while the run beside us runs user code
        warm_up(threads, heap_bytes)
        with contextlib.suppress(OSError):  # the worker may have let us go meanwhile
            os.write(warmed_fd, b"1")
        os.close(warmed_fd)
        order = _read_order(order_fd)
    except BaseException:  # nothing may escape a forked child; the worker sees it gone and forks anew
        os._exit(71)
    if order is None:
        os._exit(0)
    containment.show_self()  # the run before us is gone; the worker reads our memory use
    envelope = from_message(order["request"])  # parsed once by the worker already: cannot fail
    run.serve_one(envelope, pipe_fd, fault_fd, int(order["threads"]), bytes.fromhex(order["key"]), prepared=True)


def warm_up(threads: int, heap_bytes: int) -> None:
    """OpenMP's pool started with ``threads``, ``heap_bytes`` of heap faulted in and kept, one tiny
    batched check (vmap's first call), as a run's first parallel op, allocation and check would."""
    import torch

    torch.set_num_threads(threads)
    side = torch.ones(PARALLEL_SIDE, PARALLEL_SIDE, dtype=torch.float64)
    (side @ side).sum()
    fault_in(min(max(heap_bytes, 0), MAX_HEAP_BYTES))
    from gradviz.worker.first_calls import warm_up as first_calls

    first_calls()


def fault_in(nbytes: int) -> None:
    """Touch ``nbytes`` of fresh heap in blocks of ``BLOCK_BYTES``, one write a page, and free
    them: the heap keeps the pages for the run's own blocks."""
    import torch

    page = os.sysconf("SC_PAGE_SIZE")
    blocks = []
    for _ in range(nbytes // BLOCK_BYTES):
        block = torch.empty(BLOCK_BYTES, dtype=torch.uint8)
        block[::page] = 1
        blocks.append(block)
    del blocks


def _read_order(fd: int) -> dict | None:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks)) if chunks else None
