"""A synchronous, Qt-free client of the worker, for the command line and the Python API.

The user's code runs in the worker's run processes, never here: the worker stops an endless
loop at the request's ``timeout``, reports ``sys.exit``, ``os._exit``, ``abort()`` or a segfault
as an error naming the line, and serves on. What the user's code prints arrives on the
worker's stderr and is passed through to ``output`` (the first part and the end of megabytes).

    with WorkerClient() as worker:
        reply = worker.request("check", {"path": "f.py", "arrays": False}, timeout=20)
    reply.ok, reply.result, reply.error
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gradviz.protocol import messages
from gradviz.protocol.launch import make_run_root, remove_run_root, worker_command, worker_environment
from gradviz.schema.errors import ErrorKind

OUTPUT_HEAD = 256 * 1024  # characters of user output passed through as they come, per request
OUTPUT_TAIL = 16 * 1024  # ... and the last ones, shown at the end when there was more
STARTUP_TIMEOUT_S = 180.0  # importing torch on a cold disk can be slow; a hung start is not
STOP_WAIT_S = 2.0  # how long the worker gets to stop its run and exit before it is killed


class WorkerStartError(Exception):
    """The worker process could not be started or did not get ready."""


@dataclass
class Reply:
    """How one request ended: a result, or an error dict (kind, message, filename, lineno...)."""

    status: str  # "result" or "error"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    seconds: float = 0.0
    output_chars: int = 0  # how much the user's code printed during the request
    progress: list[tuple[int, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "result"

    @property
    def kind(self) -> str | None:
        return self.error.get("kind") if self.error else None


class _Output:
    """User output for one request: the head passed through at once, then a rolling tail."""

    def __init__(self, sink: IO[str] | None, head: int, tail: int) -> None:
        self.sink, self.head, self.tail = sink, head, tail
        self.total = 0
        self._kept = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        shown = max(0, min(len(text), self.head - self.total))
        self.total += len(text)
        if shown and self.sink is not None:
            self._write(text[:shown])
        if shown < len(text):
            self._kept = (self._kept + text[shown:])[-self.tail :]

    def finish(self) -> None:
        self.feed(b"", final=True)
        hidden = self.total - self.head - len(self._kept)
        if self.sink is not None and self.total > self.head:
            note = f"\n[gradviz: {hidden:,} characters of output from the Function's code not shown]\n"
            self._write((note if hidden > 0 else "") + self._kept)
        self.total, self._kept = 0, ""

    def _write(self, text: str) -> None:
        try:
            self.sink.write(text)
            self.sink.flush()
        except (OSError, ValueError):  # a closed or broken sink must not stop the check
            self.sink = None


class WorkerClient:
    """One worker process, requests answered one at a time."""

    def __init__(
        self,
        *,
        output: IO[str] | None = sys.stderr,
        output_head: int = OUTPUT_HEAD,
        output_tail: int = OUTPUT_TAIL,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        python: str | None = None,
        warm: bool = True,
        memory_limit_mb: float | None = None,
    ) -> None:
        self.startup_timeout, self.python, self.warm = startup_timeout, python, warm
        self.memory_limit_mb = memory_limit_mb  # None: the worker's default share of RAM
        self.info: dict[str, Any] = {}
        self._output = _Output(output, output_head, output_tail)
        self._process: subprocess.Popen | None = None
        self._selector: selectors.BaseSelector | None = None
        self._decoder = messages.LineDecoder()
        self._messages: list[dict[str, Any] | messages.BadLine] = []
        self._next_id = 1
        self._stdout_closed = False
        self.run_root: Path | None = None

    # --- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> WorkerClient:
        return self

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        self.close(polite=exc_type is None)  # Ctrl+C or a bug of ours: no time for a polite quit

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        return self._process.pid if self._process else 0

    def start(self) -> None:
        """Start the worker; it gets ready (imports torch) while the first request is on its way."""
        self.close()
        self.run_root = make_run_root()
        try:
            self._process = subprocess.Popen(
                worker_command(self.python),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=worker_environment(warm=self.warm, memory_limit_mb=self.memory_limit_mb),
                bufsize=0,
                start_new_session=True,  # Ctrl+C reaches us, and we stop the worker
            )
        except OSError as exc:
            raise WorkerStartError(f"Cannot start the gradviz worker ({self.python or sys.executable}): {exc}") from None
        self._decoder, self._messages, self._stdout_closed = messages.LineDecoder(), [], False
        self.info = {}
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._process.stdout, selectors.EVENT_READ, "stdout")
        self._selector.register(self._process.stderr, selectors.EVENT_READ, "stderr")

    def wait_ready(self) -> dict[str, Any]:
        """Block until the worker has imported torch; its ``ready`` message."""
        if not self.info:
            ready = self._wait_for(lambda m: m.get("type") == "ready", time.monotonic() + self.startup_timeout)
            self._output.finish()
            if ready is None:
                code = self._process.poll() if self._process else None
                self.close(polite=False)
                how = f"exited with code {code}" if code is not None else "did not get ready in time"
                raise WorkerStartError(f"The gradviz worker {how} while starting (see its output above).")
            self.info = ready
        return self.info

    def close(self, *, polite: bool = True) -> None:
        """Ask the worker to quit (it stops any run); kill it if it does not; remove the run folder."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            if polite:
                with contextlib.suppress(OSError):
                    process.stdin.write(messages.encode({"op": "quit"}))
                    process.stdin.close()
            else:  # SIGTERM: the worker stops its run's whole process group before it exits
                with contextlib.suppress(OSError):
                    process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_WAIT_S)
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process is not None:
            for stream in (process.stdin, process.stdout, process.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        if self.run_root is not None:
            remove_run_root(self.run_root)
            self.run_root = None

    # --- requests ------------------------------------------------------------------------
    def request(
        self,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Reply:
        """Send one request and wait for its answer; the worker stops it after ``timeout`` s.

        A run that hangs, crashes or is stopped comes back as an error naming the user's line;
        the worker serves on. Only the worker itself dying (never user code) restarts it.
        """
        if not self.alive:
            self.start()
        request_id = self._next_id
        self._next_id += 1
        message = messages.request(op, request_id, out_dir=str(self.run_root / f"run{request_id}"), **(payload or {}))
        if timeout is not None:
            message["timeout"] = timeout
        reply = Reply("error")
        start = time.monotonic()
        try:
            self._process.stdin.write(messages.encode(message))
        except OSError:  # the worker died before reading it: the branch below says so
            pass

        def answer(m: dict[str, Any] | messages.BadLine) -> bool:
            if isinstance(m, messages.BadLine):
                return True
            if m.get("type") == "ready":
                self.info = m
            if m.get("type") == "progress" and m.get("id") == request_id:
                reply.progress.append((m["done"], m["total"]))
                if progress is not None:
                    progress(m["done"], m["total"])
            return m.get("id") == request_id and messages.is_final(m)

        deadline = None if self.info else start + self.startup_timeout
        while True:
            found = self._wait_for(answer, deadline)
            if found is None and deadline is not None and self.info and self.alive and not self._stdout_closed:
                deadline = None  # it got ready in time: now wait for the answer, however long it takes
                continue
            break
        if found is None and not self.info and self.alive and not self._stdout_closed:
            reply.error = {"kind": ErrorKind.WORKER.value, "message": "The gradviz worker did not get ready in time."}
            self.close(polite=False)
        elif isinstance(found, messages.BadLine):
            reply.error = {"kind": ErrorKind.PROTOCOL.value, "message": f"The worker sent {found.describe()}"}
            self.close(polite=False)
        elif found is not None:
            reply.status = found["type"]
            reply.result, reply.error = found.get("result"), found.get("error")
        else:
            code = self._process.poll() if self._process else None
            reply.error = {
                "kind": ErrorKind.WORKER.value,
                "message": f"The gradviz worker process ended unexpectedly (exit status {code}); nothing was checked.",
            }
            self.close(polite=False)
        reply.seconds = time.monotonic() - start
        reply.output_chars = self._output.total
        self._output.finish()
        return reply

    def _wait_for(self, accept: Callable[[Any], bool], deadline: float | None) -> Any:
        """Pump both pipes until a message passes ``accept``; None at the deadline or at EOF."""
        while True:
            while self._messages:
                message = self._messages.pop(0)
                if accept(message):
                    return message
            if self._process is None or self._selector is None or self._stdout_closed:
                return None
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return None
            self._pump(wait)

    def _pump(self, wait: float | None) -> None:
        """Read what either pipe has (waiting at most ``wait`` s): messages queued, output passed on."""
        for key, _ in self._selector.select(wait):
            data = os.read(key.fileobj.fileno(), 65536)
            if data and key.data == "stderr":
                self._output.feed(data)
            elif data:
                self._messages.extend(self._decoder.feed(data))
            else:
                self._selector.unregister(key.fileobj)
                if key.data == "stdout":
                    self._stdout_closed = True


def run_request(
    op: str,
    payload: dict[str, Any],
    *,
    timeout: float | None = None,
    output: IO[str] | None = sys.stderr,
    progress: Callable[[int, int], None] | None = None,
) -> Reply:
    """Start a worker, send one request, stop the worker: what ``gradviz check`` does."""
    with WorkerClient(output=output) as client:
        client.start()
        return client.request(op, payload, timeout=timeout, progress=progress)
