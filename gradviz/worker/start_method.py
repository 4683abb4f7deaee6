"""How the worker starts each run process: the one place that chooses fork or spawn.

``fork`` (Linux, the default there): the run is forked from the worker after torch was imported
and warmed, so it starts in milliseconds (``startup`` keeps the worker fork-safe: one thread, no
CUDA). While no run works, one *spare* is forked ahead and pays a run's first-call costs (the
thread pool, the heap, vmap's first call: ``fork_spare``); a request finds it warm, or, while it
is still warming, gets a fresh fork as before.

``spawn`` (every other platform): forking a process that has imported torch is not safe on
macOS (Accelerate, libdispatch and the Objective-C runtime do not survive a fork), and Windows
has no fork. The run is a fresh ``python -P -m gradviz.worker.spawned`` (``subprocess`` execs
at once, which is safe everywhere). Its message pipe and fault file are inherited descriptors;
the request, the thread count and the run's secret key come on its stdin, a pipe only the worker
holds, never in argv or the environment, which other users' ``ps`` can read. Importing torch
costs a second or two, so one *spare* run process is always on its way: started with the worker
(its ``ready`` waits for the first spare) and again as soon as a spare is handed its request, so
the next target of a command finds one ready while this one runs. It imports torch (and warms
up), says so on a pipe of its own, and waits on stdin for its request, hidden from the run beside
it (not dumpable); the end of a run kills everything below the worker but the spare. The run's time limit counts from when it
says it started (``run.STARTED``), not while a spare handed a request at once still imports.

The worker treats both alike: it relays the run's sealed messages, asks for its stack with
the dump signal, meters and kills everything below itself, and describes a crash from the fault file.

``GRADVIZ_WORKER_START=fork`` or ``=spawn`` forces a method; the worker reads it when it
starts. (The tests force ``spawn`` on Linux for a subset of the worker tests.)
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

from gradviz.protocol import process_tree
from gradviz.protocol.launch import SAFE_PATH
from gradviz.schema.requests import Envelope
from gradviz.worker import containment

START_ENV = "GRADVIZ_WORKER_START"
METHODS = ("fork", "spawn")
SPARE_ENV = "GRADVIZ_WORKER_SPARE"  # "0": no pre-forked spare (fork; the benchmarks compare both)


def start_method(environ: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    """``fork`` on Linux, ``spawn`` elsewhere, unless ``GRADVIZ_WORKER_START`` names one.

    Raises:
        GradvizError: ``GRADVIZ_WORKER_START`` names neither; a misspelt choice is not silently
            replaced by the platform's, which would test another start method than the user asked for.
    """
    from gradviz.schema.errors import GradvizError

    environ = os.environ if environ is None else environ
    platform = platform or sys.platform
    given = environ.get(START_ENV, "")
    forced = given.strip().lower()
    if forced in METHODS:
        return forced
    if forced:
        raise GradvizError(f"{START_ENV}={given!r} is not a start method: use {' or '.join(METHODS)}, or unset it.")
    return "fork" if platform.startswith("linux") else "spawn"


@dataclass
class Started:
    """A run process the worker watches."""

    pid: int
    pipe: int  # read end of its message pipe
    faults: int  # descriptor of its fault file
    process: subprocess.Popen | None = None  # spawned: kept so Popen never reaps it behind our back
    imported: int | None = None  # a spare: readable (a byte, or its end) once it imported torch / warmed up
    order: int | None = None  # a forked spare: the write end of the pipe its order comes on

    def forget(self) -> None:
        """The run was reaped (``containment``): Popen must not wait on its pid, now free for reuse."""
        if self.process is not None and self.process.returncode is None:
            self.process.returncode = -signal.SIGKILL


class RunStarter:
    """Starts run processes by the chosen method, with one spare ready (``fork``: forked and warmed
    while no run works; ``spawn``: importing torch, also while a run works)."""

    def __init__(
        self, threads: int, *, method: str | None = None, close_in_child: tuple[int, ...] = (), fork_spares: bool | None = None
    ) -> None:
        self.method = method or start_method()
        self.threads = threads
        self.close_in_child = close_in_child  # the worker's own channels: a forked run must not hold them
        self.wipe_in_child: tuple[bytearray, ...] = ()  # the worker's secrets: zeroed in a forked run's copy
        self.spare: Started | None = None
        self.fork_spares = os.environ.get(SPARE_ENV, "1") != "0" if fork_spares is None else fork_spares
        self.heap_bytes = 0  # heap the last run used beyond the worker's: a forked spare faults that much in
        self.held = False  # memory is short: no spare until the run in progress ends (``release``)

    def wait_spare(self, seconds: float) -> bool:
        """Block until the spare has imported torch (spawn; the worker's ``ready`` waits for it, so
        the first request is not charged for an import the client's deadline does not expect)."""
        if self.spare is None or self.spare.imported is None:
            return True
        readable, _, _ = select.select([self.spare.imported], [], [], seconds)
        return bool(readable)

    def prepare(self, *, running: bool = False) -> None:
        """Have a spare run process on its way: spawned (importing torch) at any time, forked (and
        warming up) only while no run works, whose CPU and memory it would take."""
        if self.method == "fork" and (running or not self.fork_spares):
            return
        if self.spare is not None and process_tree.exit_status(self.spare.pid) is not None:
            _discard(self.spare)  # it died while it waited (killed by someone, out of memory)
            self.spare = None
        if self.spare is None and not self.held:
            with contextlib.suppress(OSError):  # no process to spare (the process limit, memory): runs still fork
                self.spare = self._spawn() if self.method == "spawn" else self._fork_spare()

    def drop_spare(self) -> bool:
        """Memory is short: the spare goes, and none comes until ``release``. Whether there was one."""
        self.held = True
        return self._let_spare_go()

    def release(self) -> None:
        """The run that was short of memory ended: spares may come again."""
        self.held = False

    def start(self, request: Envelope, key: bytes) -> Started:
        """A run process serving ``request``, its lines sealed with ``key``."""
        if self.method == "fork":
            return self._take_warm_spare(request, key) or self._fork(request, key)
        run, self.spare = self.spare or self._spawn(), None
        _close_imported(run)
        if not _hand_over(run, request, key, self.threads):  # the spare died while it waited
            _discard(run)
            run = self._spawn()
            _hand_over(run, request, key, self.threads)  # should this one die too, the worker says how
        return run

    @property
    def spares(self) -> tuple[int, ...]:
        """The spare's pid, if any: the worker's reaping, killing and metering at the end of a run
        leave it alone (``prepare`` looks after it; it is not part of any run)."""
        return (self.spare.pid,) if self.spare is not None else ()

    def close(self) -> None:
        """The worker stops: the spare goes (it never ran anything)."""
        self._let_spare_go()

    def _let_spare_go(self) -> bool:
        if self.spare is None:
            return False
        _discard(self.spare)
        self.spare = None
        return True

    def _take_warm_spare(self, request: Envelope, key: bytes) -> Started | None:
        """The forked spare, handed ``request``, if it has warmed up (else it stays the spare and
        the request gets a fresh fork: a warm-up still under way would only delay it)."""
        spare = self.spare
        if spare is None or spare.imported is None or not select.select([spare.imported], [], [], 0)[0]:
            return None
        self.spare = None
        _close_imported(spare)
        if not _hand_over(spare, request, key, self.threads):
            _discard(spare)  # it died while it waited
            return None
        return spare

    def _fork_spare(self) -> Started:
        from gradviz.worker import fork_spare

        read_end, write_end = os.pipe()
        warmed, warmed_write = os.pipe()
        order_read, order_write = os.pipe()
        fault_fd = containment.fault_file()
        pid = os.fork()
        if pid == 0:  # the spare: it keeps only its own ends
            self._leave_the_worker(keep=(write_end, fault_fd, order_read, warmed_write))
            fork_spare.serve_when_ordered(write_end, fault_fd, order_read, warmed_write, self.threads, self.heap_bytes)
        for fd in (write_end, warmed_write, order_read):
            os.close(fd)
        return Started(pid, read_end, fault_fd, imported=warmed, order=order_write)

    def _fork(self, request: Envelope, key: bytes) -> Started:
        read_end, write_end = os.pipe()
        fault_fd = containment.fault_file()
        pid = os.fork()
        if pid == 0:  # the run process
            from gradviz.worker.run import serve_one

            self._leave_the_worker(keep=(write_end, fault_fd))
            serve_one(request, write_end, fault_fd, self.threads, key)
        os.close(write_end)
        return Started(pid, read_end, fault_fd)

    def _leave_the_worker(self, keep: tuple[int, ...]) -> None:
        """In a forked run or spare: the worker's channels and every descriptor but ``keep`` closed
        (the run talks to the worker only through its pipe; the spare's order pipe above all must
        not reach user code), the worker's secrets zeroed in our copy of its memory."""
        for fd in self.close_in_child:  # may be a standard stream, which close_all_but keeps
            with contextlib.suppress(OSError):
                os.close(fd)
        containment.close_all_but(keep)
        for secret in self.wipe_in_child:
            secret[:] = bytes(len(secret))

    def _spawn(self) -> Started:
        read_end, write_end = os.pipe()
        imported, imported_write = os.pipe()
        fault_fd = containment.fault_file()
        passed = (write_end, fault_fd, imported_write)
        command = [sys.executable, *SAFE_PATH, "-m", "gradviz.worker.spawned", *map(str, passed)]
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, pass_fds=passed)
        except BaseException:
            for fd in (read_end, imported, fault_fd):
                os.close(fd)
            raise
        finally:
            os.close(write_end)
            os.close(imported_write)
        return Started(process.pid, read_end, fault_fd, process, imported)


def _hand_over(run: Started, request: Envelope, key: bytes, threads: int) -> bool:
    """Send a spare its order, ``{"request", "key", "threads"}`` as JSON, and close the pipe it
    came on (spawned: its stdin; forked: its order pipe); False when it is gone."""
    order = json.dumps({"request": request.to_message(), "key": key.hex(), "threads": threads}).encode()
    if run.order is not None:
        pipe: IO[bytes] | None = os.fdopen(run.order, "wb")
        run.order = None
    else:
        pipe = run.process.stdin if run.process is not None else None
    if pipe is None:
        return False
    try:
        pipe.write(order)
        pipe.close()
    except OSError:
        with contextlib.suppress(OSError):
            pipe.close()
        return False
    return True


def _close_imported(run: Started) -> None:
    if run.imported is not None:
        os.close(run.imported)
        run.imported = None


def _discard(run: Started) -> None:
    """Kill and reap a run process that never got (or never read) its request (still unreaped:
    the worker's idle reaping leaves the spare alone, so its pid is still ours), and close what
    the worker holds of it."""
    if run.process is not None and run.process.stdin is not None:
        with contextlib.suppress(OSError):
            run.process.stdin.close()
    if run.order is not None:  # a forked spare's order pipe: closed, it would exit on its own
        os.close(run.order)
        run.order = None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(run.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(run.pid, 0)
    run.forget()
    _close_imported(run)
    os.close(run.pipe)
    os.close(run.faults)


def cuda_probe_command() -> list[str] | None:
    """How ``startup`` asks for the CUDA devices without initialising CUDA in the worker: None to
    fork a throw-away child (fork method), else a fresh interpreter to run."""
    if start_method() == "fork":
        return None
    return [sys.executable, *SAFE_PATH, "-m", "gradviz.worker.startup"]
