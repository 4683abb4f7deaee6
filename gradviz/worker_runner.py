"""A synchronous, Qt-free client of the worker process, for the command line and scripts.

``gradviz check`` runs the user's code here, in ``python -m gradviz.worker``, never in its own
process: an endless loop can then be stopped (``timeout``), and ``sys.exit``, ``os._exit``,
``abort()`` or a segfault in forward or backward end the worker, not the check, so they can
never read as a pass. What the user's code prints arrives on the worker's stderr and is passed
through to ``output`` (only the first and last part of megabytes of it).

The worker writes the Python stack to a fault file on a fatal signal, on ``os._exit`` and when
asked with SIGUSR1 just before a timeout kills it; the runner reads the user's frames from it,
so a crash or a hang still names the line.

    with WorkerRunner() as worker:
        reply = worker.request("check", {"path": "f.py", "arrays": False}, timeout=20)
    reply.status  # "result", "error", "timeout" or "crashed"
"""

from __future__ import annotations

import codecs
import contextlib
import json
import linecache
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

OUTPUT_HEAD = 256 * 1024  # characters of user output passed through as they come, per request
OUTPUT_TAIL = 16 * 1024  # ... and the last ones, shown at the end when there was more
STARTUP_TIMEOUT_S = 180.0  # importing torch on a cold disk can be slow; a hung start is not
DUMP_WAIT_S = 1.0  # how long a hung worker gets to write its stack before it is killed

_FRAME = re.compile(r'File "(?P<file>.+?)", line (?P<line>\d+),? in (?P<name>\S+)')

SIGNAL_MEANING = {
    "SIGSEGV": "a segmentation fault: C code read or wrote memory it does not own",
    "SIGBUS": "a bus error: C code read memory it does not own",
    "SIGABRT": "abort(): os.abort() or a failed assertion in C code",
    "SIGFPE": "a floating-point exception in C code",
    "SIGILL": "an illegal instruction",
    "SIGKILL": "SIGKILL: usually the system's out-of-memory killer",
    "SIGTERM": "SIGTERM: something asked it to stop",
}


class WorkerStartError(Exception):
    """The worker process could not be started or did not get ready."""


@dataclass
class Reply:
    """How one request ended."""

    status: str  # "result", "error", "timeout" or "crashed"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # the worker's error, or ours for timeout / crashed
    seconds: float = 0.0
    returncode: int | None = None  # the worker's exit status when it ended (negative: signal)
    output_chars: int = 0  # how much the user's code printed during the request
    progress: list[tuple[int, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "result"


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


class WorkerRunner:
    """One worker process, requests answered one at a time; restarted by ``start`` after a death."""

    def __init__(
        self,
        *,
        output: IO[str] | None = sys.stderr,
        output_head: int = OUTPUT_HEAD,
        output_tail: int = OUTPUT_TAIL,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        python: str = sys.executable,
    ) -> None:
        self.startup_timeout = startup_timeout
        self.python = python
        self.info: dict[str, Any] = {}
        self._output = _Output(output, output_head, output_tail)
        self._process: subprocess.Popen | None = None
        self._selector: selectors.BaseSelector | None = None
        self._stdout = b""
        self._messages: list[dict[str, Any]] = []
        self._next_id = 1
        self._tmp = Path(tempfile.mkdtemp(prefix="gradviz-runner-"))
        self._fault_path = self._tmp / "faults.txt"
        self._fault_offset = 0
        self._stdout_closed = False
        self._last_returncode: int | None = None

    # --- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> WorkerRunner:
        return self

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        if exc_type is not None:  # Ctrl+C or a bug of ours: no time for a polite quit
            self._kill()
        self.close()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        return self._process.pid if self._process else 0

    def start(self) -> dict[str, Any]:
        """Start a worker and wait for its ``ready`` message (torch imported); return it."""
        self._kill()
        root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "GRADVIZ_FAULT_FILE": str(self._fault_path)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        if threading.current_thread() is threading.main_thread():
            # the kernel ties this to the starting thread: only safe from one that lives on
            env["GRADVIZ_PARENT_PID"] = str(os.getpid())
        self._fault_offset = 0
        try:
            self._process = subprocess.Popen(
                [self.python, "-m", "gradviz.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                bufsize=0,
                start_new_session=True,  # Ctrl+C reaches us, and we stop the worker
            )
        except OSError as exc:
            raise WorkerStartError(f"Cannot start the gradviz worker ({self.python}): {exc}") from None
        self._stdout, self._messages, self._stdout_closed = b"", [], False
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._process.stdout, selectors.EVENT_READ, "stdout")
        self._selector.register(self._process.stderr, selectors.EVENT_READ, "stderr")
        deadline = time.monotonic() + self.startup_timeout
        ready = self._wait_for(lambda m: m.get("type") == "ready", deadline)
        self._output.finish()
        if ready is None:
            code = self._process.poll()
            self._kill()
            how = f"exited with code {code}" if code is not None else "did not get ready in time"
            raise WorkerStartError(f"The gradviz worker {how} while starting (see its output above).")
        self.info = ready
        return ready

    def close(self) -> None:
        """Ask the worker to quit, kill it if it does not, and remove the temporary files."""
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                process.stdin.write(b'{"op": "quit"}\n')
                process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(2.0)
        self._kill()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _kill(self) -> None:
        process, self._process = self._process, None
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)  # its own session: children go too
            with contextlib.suppress(OSError):
                process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                stream.close()

    # --- requests ------------------------------------------------------------------------
    def request(
        self,
        op: str,
        payload: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Reply:
        """Send one request and wait for its answer, at most ``timeout`` seconds of running.

        A worker that does not answer in time is stopped (``status="timeout"``); one that ends
        without answering gives ``status="crashed"``. Either way it is gone: call ``start``
        before the next request. Both errors name the line in the user's file where the stack
        could be read.
        """
        if not self.alive:
            self.start()
        request_id = self._next_id
        self._next_id += 1
        message = {"id": request_id, "op": op, **(payload or {})}
        filename = _user_filename(message)
        reply = Reply("crashed")
        self._fault_offset = _size(self._fault_path)
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        try:
            self._process.stdin.write((json.dumps(message) + "\n").encode())
        except OSError:  # it died between two requests: the crash branch below says how
            pass

        def answer(m: dict[str, Any]) -> bool:
            if m.get("type") == "progress" and m.get("id") == request_id:
                reply.progress.append((m["done"], m["total"]))
                if progress is not None:
                    progress(m["done"], m["total"])
            return m.get("id") == request_id and m.get("type") in ("result", "error")

        found = self._wait_for(answer, deadline)
        if found is not None:
            reply.status = found["type"]
            reply.result = found.get("result")
            reply.error = found.get("error")
        elif self.alive and not self._stdout_closed:  # out of time
            self._dump_stack()
            self._kill_and_drain()
            reply.status = "timeout"
            reply.error = self._timeout_error(timeout or 0.0, filename)
        else:
            self._kill_and_drain()
            reply.error = self._crash_error(filename)
        reply.returncode = None if self.alive else self._last_returncode
        reply.seconds = time.monotonic() - start
        reply.output_chars = self._output.total
        self._output.finish()
        return reply

    def _wait_for(self, accept: Callable[[dict[str, Any]], bool], deadline: float | None) -> dict | None:
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
        if self._selector is None or not self._selector.get_map():
            if wait:
                time.sleep(min(wait, 0.1))
            return
        for key, _ in self._selector.select(wait):
            data = os.read(key.fileobj.fileno(), 65536)
            if data and key.data == "stderr":
                self._output.feed(data)
            elif data:
                self._take_stdout(data)
            else:
                self._selector.unregister(key.fileobj)
                if key.data == "stdout":
                    self._stdout_closed = True

    def _take_stdout(self, data: bytes) -> None:
        self._stdout += data
        *lines, self._stdout = self._stdout.split(b"\n")
        for line in lines:
            if line.strip():
                try:
                    self._messages.append(json.loads(line))
                except ValueError:  # cannot happen with our worker; never let it pass silently
                    self._output.feed(b"[gradviz: bad line from the worker] " + line[:200] + b"\n")

    def _dump_stack(self) -> None:
        """Ask a hung worker for its stack (faulthandler on SIGUSR1) before it is killed."""
        before = _size(self._fault_path)
        with contextlib.suppress(OSError):
            os.kill(self._process.pid, signal.SIGUSR1)
        end = time.monotonic() + DUMP_WAIT_S
        while time.monotonic() < end and _size(self._fault_path) == before:
            self._pump(0.02)
        time.sleep(0.05)  # let it finish writing the dump

    def _kill_and_drain(self) -> None:
        """Kill the worker (if still alive) and pass on what it printed before it went."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 2.0
        while self._selector is not None and self._selector.get_map() and time.monotonic() < deadline:
            self._pump(0.1)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(2.0)
        self._last_returncode = process.poll()
        self._kill()

    # --- what went wrong ------------------------------------------------------------------
    def _new_faults(self) -> str:
        try:
            with open(self._fault_path, encoding="utf-8", errors="replace") as f:
                f.seek(self._fault_offset)
                return f.read()
        except OSError:
            return ""

    def _where(self, filename: str | None) -> tuple[dict[str, Any], str]:
        """The user's frames from the fault file: error fields and a phrase for the message."""
        frames = user_frames_from_dump(self._new_faults(), filename)
        if not frames:
            return {}, ""
        last = frames[-1]
        fields = {"filename": filename, "lineno": last["lineno"], "traceback": frames}
        return fields, f" It was at line {last['lineno']}, in {last['name']}."

    def _timeout_error(self, timeout: float, filename: str | None) -> dict[str, Any]:
        fields, where = self._where(filename)
        message = (
            f"The Function's code did not finish within {timeout:g} s; an endless loop in forward or "
            f"backward? gradviz stopped the worker running it.{where}"
        )
        return {"kind": "timeout", "message": message, "filename": filename, "lineno": None, **fields}

    def _crash_error(self, filename: str | None) -> dict[str, Any]:
        fields, where = self._where(filename)
        code = self._last_returncode
        faults = self._new_faults()
        called = re.search(r"gradviz: os\._exit\((.*?)\) called", faults)
        if called:
            how = f"it called os._exit({called.group(1)})"
        elif code is not None and code < 0:
            name = _signal_name(-code)
            how = f"the worker was killed by {name} ({SIGNAL_MEANING.get(name, 'a fatal signal')})"
        elif code is not None:
            how = f"the worker exited with code {code} (os._exit, or a C library calling exit()?)"
        else:
            how = "the worker closed its output and stopped answering"
        message = f"Nothing was checked: the Function's code ended the process; {how}.{where}"
        return {"kind": "crashed", "message": message, "filename": filename, "lineno": None, **fields}


def user_frames_from_dump(text: str, filename: str | None) -> list[dict[str, Any]]:
    """Frames of ``filename`` in a faulthandler dump, outermost first, like a traceback.

    faulthandler lists the most recent call first and, with several threads, the current
    (or first) thread's block first; only that block is read.
    """
    if not filename or not text:
        return []
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    current = [b for b in blocks if b.lstrip().startswith("Current thread")]
    frames = []
    for block in current or blocks:
        found = [m for m in _FRAME.finditer(block) if m.group("file") == filename]
        if found:
            for m in reversed(found):
                line = int(m.group("line"))
                text_line = linecache.getline(filename, line).strip()
                frames.append({"filename": filename, "lineno": line, "name": m.group("name"), "line": text_line})
            break
    return frames


def _user_filename(request: dict[str, Any]) -> str | None:
    if request.get("path"):
        return str(Path(request["path"]).resolve())
    return request.get("filename")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def run_request(
    op: str,
    payload: dict[str, Any],
    *,
    timeout: float | None = None,
    output: IO[str] | None = sys.stderr,
    progress: Callable[[int, int], None] | None = None,
) -> Reply:
    """Start a worker, send one request, stop the worker: what ``gradviz check`` does."""
    with WorkerRunner(output=output) as runner:
        runner.start()
        return runner.request(op, payload, timeout=timeout, progress=progress)
