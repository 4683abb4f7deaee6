"""A synchronous, Qt-free client of the worker, for the command line and the Python API.

The user's code runs in the worker's run processes, never here: the worker stops an endless
loop at the request's ``timeout``, reports ``sys.exit``, ``os._exit``, ``abort()`` or a segfault
as an error naming the line, and serves on. What the user's code prints arrives on the
worker's stderr and is passed through to ``output`` (the first part and the end of megabytes).
Should the worker itself stop answering (user code stopped it with SIGSTOP), the client's own
deadline, the timeout plus a grace, ends it and its whole process tree (``protocol.unresponsive``).
Containment does not rest on the worker: a small keeper process started first
(``protocol.keeper``) ends every process of the worker's tree when the worker dies, is
replaced, or the client itself is killed, members that left the session or were stopped too.
Every hop is sealed under the session's secret (``messages.ClientSession``): a line the worker
did not seal is ignored and reported, never read as a verdict.

    with WorkerClient() as worker:
        reply = worker.request(CheckRequest(CodeSource(path="f.py"), timeout=20, arrays=False))
    reply.ok, reply.result, reply.error
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gradviz.protocol import messages, unresponsive
from gradviz.protocol.keeper import TreeKeeper
from gradviz.protocol.launch import (
    PROTOCOL_FD_ENV,
    TREE_ENV,
    NoTempFolder,
    WorkerUnsupported,
    make_run_root,
    remove_run_root,
    usable_cwd,
    worker_command,
    worker_environment,
)
from gradviz.schema.errors import ErrorKind, GradvizError
from gradviz.schema.requests import Request, to_message

OUTPUT_HEAD = 256 * 1024  # characters of user output passed through as they come, per request
OUTPUT_TAIL = 16 * 1024  # ... and the last ones, shown at the end when there was more
STARTUP_TIMEOUT_S = 180.0  # importing torch on a cold disk can be slow; a hung start is not
STOP_WAIT_S = 2.0  # how long the worker gets to stop its run and exit before it is killed
SLICE_S = 0.5  # with a deadline, the pipes are waited on this long at a time ...
STALL_S = 1.0  # ... and a wait that took this much longer was time this process did not run


class WorkerStartError(GradvizError):
    """The worker process could not be started (or cannot run on this platform) or did not get ready."""

    kind = ErrorKind.WORKER


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP: the terminal closed), raised where Ctrl+C raises KeyboardInterrupt:
    the same cleanup, exit status 143 (129)."""

    exit_code = 128 + signal.SIGTERM

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.exit_code = 128 + int(signum)
        self.signum = int(signum)

    def __str__(self) -> str:
        return "hung up" if self.signum == getattr(signal, "SIGHUP", None) else "terminated"


@dataclass
class Reply:
    """How one request ended: a result, or an error dict (kind, message, filename, lineno...)."""

    status: str  # "result" or "error"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    seconds: float = 0.0
    output_chars: int = 0  # how much the user's code printed during the request
    unsealed: list[str] = field(default_factory=list)  # lines not sealed by the worker, ignored
    progress: list[tuple[int, int]] = field(default_factory=list)
    progress_units: list[str] = field(default_factory=list)  # what each progress message counted ('': unsaid)

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

    def note(self, text: str) -> None:
        """A line of gradviz's own among the user's output (not counted as theirs)."""
        if self.sink is not None:
            self._write(text)

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
        self._session = messages.ClientSession()
        self._messages: list[dict[str, Any] | messages.BadLine] = []
        self._in_flight = 0  # the request waiting for its answer
        self._unsealed_seen = 0  # lines of the session not sealed by the worker, already acted on
        self._next_id = 1
        self._stdout_closed = False
        self._protocol: IO[bytes] | None = None  # the worker's messages (its own pipe)
        self._ready_at = 0.0  # when the worker said it was ready (time.monotonic)
        self.grace = unresponsive.GRACE_S  # past a request's timeout, how long the worker gets to answer
        self.run_root: Path | None = None
        self._keeper = TreeKeeper()  # ends the worker's tree if the worker, or we, cannot

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
        try:
            command = worker_command(self.python)
        except WorkerUnsupported as exc:
            raise WorkerStartError(exc.message) from None
        try:
            self.run_root = make_run_root()
        except NoTempFolder as exc:
            error = WorkerStartError(exc.message)
            error.kind = exc.kind
            raise error from None
        # the messages come on a pipe of their own: the interpreter's stdout carries whatever a
        # sitecustomize or a .pth file prints before the worker's first line runs
        read_end, write_end = os.pipe()
        env = worker_environment(warm=self.warm, memory_limit_mb=self.memory_limit_mb)
        env[PROTOCOL_FD_ENV] = str(write_end)
        env[TREE_ENV] = self._keeper.start()
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,  # one stream of output: what is printed, either way
                env=env,
                cwd=usable_cwd(),
                bufsize=0,
                pass_fds=(write_end,),
                start_new_session=True,  # Ctrl+C reaches us, and we stop the worker
            )
        except OSError as exc:
            os.close(read_end)
            self._keeper.release(clean=True)
            hint = " (the limit on processes, ulimit -u, is reached?)" if exc.errno == errno.EAGAIN else ""
            raise WorkerStartError(
                f"Cannot start the gradviz worker ({self.python or sys.executable}): {exc}{hint}"
            ) from None
        finally:
            os.close(write_end)
        self._keeper.watch(self._process.pid)
        self._protocol = os.fdopen(read_end, "rb", buffering=0)
        self._session, self._messages, self._stdout_closed = messages.ClientSession(), [], False
        self._unsealed_seen = 0
        self._write(self._session.hello())  # before anything else: the worker reads it first
        self.info = {}
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._protocol, selectors.EVENT_READ, "stdout")
        self._selector.register(self._process.stdout, selectors.EVENT_READ, "stderr")

    def wait_ready(self) -> dict[str, Any]:
        """Block until the worker has imported torch; its ``ready`` message."""
        if not self.info:
            end = time.monotonic() + self.startup_timeout
            ready = self._wait_for(lambda m: m.get("type") == "ready" or _start_failed(m), lambda: end)
            self._output.finish()
            if ready is not None and _start_failed(ready):
                self.close(polite=False)
                raise WorkerStartError(ready["error"]["message"])
            if ready is None:
                code = self._process.poll() if self._process else None
                self.close(polite=False)
                how = f"exited with code {code}" if code is not None else "did not get ready in time"
                raise WorkerStartError(f"The gradviz worker {how} while starting (see its output above).")
            self.info, self._ready_at = ready, time.monotonic()
        return self.info

    def close(self, *, polite: bool = True) -> None:
        """Ask the worker to quit (it stops any run); past ``STOP_WAIT_S`` kill it and every process
        below it, stopped or not; remove the run folder. A second Ctrl+C or a SIGTERM waits until
        this is done: cut short, it would leave the worker's tree behind."""
        with _signals_held():
            process, self._process = self._process, None
            clean = polite and process is not None and process.poll() is None
            if process is not None and process.poll() is None:
                if polite:
                    with contextlib.suppress(OSError):
                        process.stdin.write(self._session.encode({"op": "quit"}))
                        process.stdin.close()
                else:  # SIGTERM: the worker stops its run's whole process tree before it exits
                    with contextlib.suppress(OSError):
                        process.terminate()
                unresponsive.wake(process.pid)  # a stopped worker acts on neither until continued
                try:
                    process.wait(STOP_WAIT_S)
                except subprocess.TimeoutExpired:  # stopped again, or wedged: not waited for any longer
                    clean = False
                    unresponsive.end_worker(process.pid)
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)  # what is left of its session's group
                process.wait()
            self._keeper.release(clean=clean and process is not None and process.returncode == 0)
            if process is not None:
                for stream in (process.stdin, process.stdout, self._protocol):
                    with contextlib.suppress(OSError, AttributeError):
                        stream.close()
                self._protocol = None
            if self._selector is not None:
                self._selector.close()
                self._selector = None
            if self.run_root is not None:
                remove_run_root(self.run_root)
                self.run_root = None

    # --- requests ------------------------------------------------------------------------
    def request(self, request: Request, *, progress: Callable[[int, int], None] | None = None) -> Reply:
        """Send one request and wait for its answer; the worker stops it after ``request.timeout`` s.

        A run that hangs, crashes or is stopped comes back as an error naming the user's line;
        the worker serves on. Only the worker itself dying, or not answering ``grace`` s past
        the timeout (user code stopped it), restarts it.

        Args:
            request: the job (``gradviz.schema.requests``); its ``timeout`` (None or 0: no
                limit) is enforced by the worker, and by this client ``grace`` s later.
            progress: called with (done, total) as the worker reports them.

        Returns:
            How the request ended: its result, or an error.
        """
        if not self.alive:
            self.start()
        request_id = self._next_id
        self._next_id += 1
        message = to_message(request, request_id, str(self.run_root / f"run{request_id}"))
        timeout = request.timeout
        reply = Reply("error")
        start = time.monotonic()
        if self.info:
            self._ready_at = start
        self._write(self._session.encode(message))  # failing, the worker died: the branch below says so
        self._in_flight, unsealed_before = request_id, len(self._session.unsealed)

        def answer(m: dict[str, Any] | messages.BadLine) -> bool:
            if isinstance(m, messages.BadLine):
                return True
            if m.get("type") == "ready":
                self.info, self._ready_at = m, time.monotonic()
            if m.get("type") == "progress" and m.get("id") == request_id:
                reply.progress.append((m["done"], m["total"]))
                reply.progress_units.append(m.get("unit", ""))
                if progress is not None:
                    progress(m["done"], m["total"])
            return (m.get("id") == request_id and messages.is_final(m)) or (not self.info and _start_failed(m))

        def deadline() -> float | None:
            """Until ready: the start-up limit. Then: the timeout (counted from the ready worker's
            first chance to run it) plus the grace, or never without a timeout."""
            if not self.info:
                return start + self.startup_timeout
            return unresponsive.answer_deadline(max(start, self._ready_at), timeout, self.grace)

        try:
            found = self._wait_for(answer, deadline)
        finally:
            self._in_flight = 0
        self._say_unsealed(unsealed_before)
        unanswered = found is None and self.alive and not self._stdout_closed  # a deadline passed
        if unanswered and not self.info:
            reply.error = {"kind": ErrorKind.WORKER.value, "message": "The gradviz worker did not get ready in time."}
            self.close(polite=False)
        elif unanswered:  # stopped (SIGSTOP) or wedged: the worker did not stop the run at its timeout
            reply.error = unresponsive.unresponsive_error(ErrorKind.TIMEOUT, timeout, self.grace)
            self._end_unresponsive()
        elif isinstance(found, messages.BadLine):
            reply.error = {"kind": ErrorKind.PROTOCOL.value, "message": f"The worker sent {found.describe()}"}
            self.close(polite=False)
        elif found is not None:
            reply.status = found["type"]
            reply.result, reply.error = found.get("result"), found.get("error")
            if _start_failed(found):  # it exits: the next request starts a fresh one
                self.close(polite=False)
        else:
            code = self._exit_status()
            reply.error = {
                "kind": ErrorKind.WORKER.value,
                "message": f"The gradviz worker process ended unexpectedly (exit status {code}); nothing was checked.",
            }
            self.close(polite=False)
        reply.seconds = time.monotonic() - start
        reply.unsealed = [line.text for line in self._session.unsealed[unsealed_before:]]
        reply.output_chars = self._output.total
        self._output.finish()
        return reply

    def _exit_status(self) -> int | None:
        """How the worker ended; it closed its output first, so give it a moment to be gone."""
        if self._process is None:
            return None
        try:
            return self._process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            return None

    def _write(self, data: bytes) -> None:
        try:
            self._process.stdin.write(data)
        except (OSError, AttributeError):  # gone: the caller finds out from its output
            pass

    def _say_unsealed(self, before: int) -> None:
        """Lines the worker did not seal (something else wrote them into its channel, or the
        interpreter printed them) were ignored: say so beside what the user's code printed."""
        lines = self._session.unsealed[before:]
        if lines:
            shown = lines[0].text if len(lines[0].text) <= 120 else lines[0].text[:120] + "…"
            self._output.note(
                f"gradviz: ignored {len(lines)} line(s) in the worker's answer channel that the worker did not "
                f"seal (written there by something else, first {shown!r}); the answer below is the worker's own.\n"
            )

    def _end_unresponsive(self) -> None:
        """Kill the worker that stopped answering, with its whole tree, before anything else: the
        polite quit of ``close`` would only cost its wait."""
        if self._process is not None and self._process.poll() is None:
            unresponsive.end_worker(self._process.pid)
        self.close(polite=False)

    def _wait_for(self, accept: Callable[[Any], bool], deadline: Callable[[], float | None]) -> Any:
        """Pump both pipes until a message passes ``accept``; None at ``deadline()`` (asked anew
        after each read: the ready message moves it) or at EOF.

        The deadline counts only the time this process ran: a client stopped (Ctrl+Z) or starved
        for a while moves it on by that much (a wait that overran its slice by ``STALL_S``), since
        the worker went on meanwhile; and what is already in the pipes is read before the deadline
        is tested, so an answer that came while we were stopped is never taken for no answer."""
        stalled = 0.0
        while True:
            while self._messages:
                message = self._messages.pop(0)
                if accept(message):
                    return message
            if self._process is None or self._selector is None or self._stdout_closed:
                return None
            until = deadline()
            if until is None:
                self._pump(None)
                continue
            wait = until + stalled - time.monotonic()
            if wait <= 0:
                if self._pump(0):
                    continue
                return None
            piece = min(wait, SLICE_S)
            before = time.monotonic()
            self._pump(piece)
            overrun = time.monotonic() - before - piece
            if overrun > STALL_S:
                stalled += overrun

    def _pump(self, wait: float | None) -> bool:
        """Read what either pipe has (waiting at most ``wait`` s): messages queued, output passed
        on. True when something was read."""
        read = False
        for key, _ in self._selector.select(wait):
            read = True
            data = os.read(key.fileobj.fileno(), 65536)
            if data and key.data == "stderr":
                self._output.feed(data)
            elif data:
                self._messages.extend(self._session.feed(data))
                self._repeat_if_lost()
            else:
                self._selector.unregister(key.fileobj)
                if key.data == "stdout":
                    self._stdout_closed = True
        return read


    MAX_REPEATS = 16

    def _repeat_if_lost(self) -> None:
        """A line we did not trust arrived while a request waits: it may have been written into
        the middle of the worker's answer, so ask for that answer again (the worker repeats it
        if it was sent; if not, it comes when ready). A few times at most per session."""
        count = len(self._session.unsealed)
        if count > self._unsealed_seen and self._in_flight and self._unsealed_seen < self.MAX_REPEATS:
            self._write(self._session.encode({"op": "repeat", "id": self._in_flight}))
        self._unsealed_seen = count


def _start_failed(message: dict[str, Any] | messages.BadLine) -> bool:
    """The worker's one line on why it could not start (it exits after it)."""
    return isinstance(message, dict) and message.get("type") == "error" and message.get("id") is None and (
        (message.get("error") or {}).get("kind") == ErrorKind.WORKER.value
    )


def run_request(
    request: Request,
    *,
    output: IO[str] | None = sys.stderr,
    progress: Callable[[int, int], None] | None = None,
) -> Reply:
    """Start a worker, send one request, stop the worker: what ``gradviz check`` does.

    A SIGTERM meanwhile raises ``Terminated`` (a KeyboardInterrupt), so the worker's tree is
    killed on the way out as after a Ctrl+C: left to the worker, a stopped one would never go.
    """
    with worker_session(output=output) as client:
        client.start()
        return client.request(request, progress=progress)


@contextlib.contextmanager
def worker_session(*, output: IO[str] | None = sys.stderr) -> Iterator[WorkerClient]:
    """One worker for several requests (``gradviz check a.py b.py``: torch imported once), started
    by the first; SIGTERM raises ``Terminated`` meanwhile, as in ``run_request``."""
    with _sigterm_raises(), WorkerClient(output=output) as client:
        yield client


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def _sigterm_raises():
    """SIGTERM and SIGHUP (the terminal closed) raise ``Terminated`` inside the block, each while
    its handler is still the default one and this is the main thread (a host program's own
    handler is left alone): the worker's tree and the run folder go on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [s for s in ENDING_SIGNALS if signal.getsignal(s) == signal.SIG_DFL]
    for each in taken:
        signal.signal(each, _raise_terminated)
    try:
        yield
    finally:
        for each in taken:
            signal.signal(each, signal.SIG_DFL)


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait (blocked, not lost) until the block is done: the cleanup of a first
    Ctrl+C is not cut short by a second one. They are raised as usual after it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *ENDING_SIGNALS})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
