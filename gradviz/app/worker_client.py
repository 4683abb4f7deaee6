"""The window's handle on the worker (``python -m gradviz.worker``): a thin Qt transport.

The protocol (messages, framing, the bad-line guard, how the worker is started) lives in
``gradviz.protocol``; this class only moves bytes with QProcess and turns messages into
signals, so the window never waits. The worker runs every request in a fresh process of its
own, enforces the request's time limit, and answers a Cancel, a timeout or a crash of the
user's code with an error naming the line; it never dies of user code. If the worker itself
dies (it should not), a fresh one is started and ``crashed`` says so. If it stops answering (user
code stopped it with SIGSTOP, or wedged it), this client's own deadline, the request's timeout
plus a grace or a grace after Cancel, kills it with its whole process tree, fails the request
(timeout or cancelled, saying so) and starts a fresh worker (``protocol.unresponsive``).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from gradviz.protocol import messages, unresponsive
from gradviz.protocol.keeper import TreeKeeper
from gradviz.protocol.launch import (
    TREE_ENV,
    make_run_root,
    remove_run_root,
    worker_command,
    worker_environment,
)
from gradviz.schema.errors import ErrorKind
from gradviz.schema.requests import Request, to_message

OUTPUT_LIMIT = 64 * 1024  # characters of user output kept per run: megabytes of print stay cheap


class WorkerClient(QObject):
    ready = Signal(dict)  # {"torch": version, "devices": [...], "pid": ...}
    progress = Signal(int, int, int)  # request id, done, total
    finished = Signal(int, dict)  # request id, result payload
    failed = Signal(int, dict)  # request id, error {"kind", "message", "lineno", "traceback", ...}
    crashed = Signal(int, str)  # request id (0 if idle), what happened to the worker itself
    output = Signal(str)  # text the user's code printed

    def __init__(self, parent: QObject | None = None, *, warm: bool = True) -> None:
        super().__init__(parent)
        self.warm = warm
        self._process: QProcess | None = None
        self._session = messages.ClientSession()
        self._keeper = TreeKeeper()  # ends the worker's tree should the worker, or this process, die
        self._next_id = 1
        self._running: int = 0  # id of the request in flight, 0 if none
        self._last_answered = 0  # id of the request answered last
        self.is_ready = False
        self.info: dict[str, Any] = {}
        self.progress_unit = ""  # what the last progress message counted ('' where it did not say)
        self.output_text = ""
        self.tmp_root: Path = make_run_root()
        self.grace = unresponsive.GRACE_S  # past a timeout or a Cancel, how long the worker gets to answer
        self._timeout: float | None = None  # the time limit of the request in flight
        self._cancel_sent = False  # the request in flight was told to stop
        self._deadline = QTimer(self)  # when the request in flight must have been answered
        self._deadline.setSingleShot(True)
        self._deadline.timeout.connect(self._on_deadline)

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Start a worker in the background; ``ready`` fires once torch is imported there."""
        self.is_ready = False
        self._session = messages.ClientSession()  # a fresh secret for every worker
        process = QProcess(self)
        env = QProcessEnvironment()
        for key, value in worker_environment(warm=self.warm).items():
            env.insert(key, value)
        env.insert(TREE_ENV, self._keeper.start())
        process.setProcessEnvironment(env)
        # each slot is told which process spoke: a stopped worker's last words are dropped
        process.readyReadStandardOutput.connect(lambda: self._on_stdout(process))
        process.readyReadStandardError.connect(lambda: self._on_stderr(process))
        process.finished.connect(lambda code, status: self._on_finished(process, code, status))
        keeper = self._keeper
        process.started.connect(lambda: keeper.watch(int(process.processId())))
        self._process = process
        program, *arguments = worker_command()
        process.start(program, arguments)
        process.write(self._session.hello())  # the first thing the worker reads

    def shutdown(self) -> None:
        """Stop the worker (it stops any run first) and remove the result files (window closing).
        A worker that does not quit within 2 s (stopped, or wedged) is killed with its whole tree."""
        process, self._process = self._process, None
        self._deadline.stop()
        if process is not None:
            process.write(self._session.encode({"op": "quit"}))
            process.closeWriteChannel()
            unresponsive.wake(int(process.processId()))  # a stopped worker reads nothing until continued
            clean = process.waitForFinished(2000)
            if not clean:
                unresponsive.end_worker(int(process.processId()))
                if not process.waitForFinished(1000):
                    process.kill()
                    process.waitForFinished(1000)
            clean = clean and process.exitStatus() == QProcess.ExitStatus.NormalExit and process.exitCode() == 0
            self._keeper.release(clean=clean)
            _let_go(process)
        self._running = 0
        remove_run_root(self.tmp_root)

    def cancel(self) -> None:
        """Stop the run in flight; its ``failed`` (kind cancelled, with the line) follows, from the
        worker, or from here after ``grace`` s if the worker does not answer."""
        if self._running and self._process is not None:
            self._process.write(self._session.encode({"op": "cancel", "id": self._running}))
            self._cancel_sent = True
            if self.is_ready:  # a worker still importing torch answers the cancel once it is ready
                self._arm(self.grace)

    @property
    def pid(self) -> int:
        return int(self._process.processId()) if self._process else 0

    @property
    def running(self) -> int:
        """Id of the request in flight, 0 when idle."""
        return self._running

    @property
    def busy(self) -> bool:
        return bool(self._running)

    # --- requests ------------------------------------------------------------------------
    def submit(self, request: Request) -> int:
        """Send a request; its answer comes as ``finished`` or ``failed`` with the returned id.

        Args:
            request: the job (``gradviz.schema.requests``); its ``timeout`` (None or 0: no
                limit) is enforced by the worker, and by this client ``grace`` s later.

        Returns:
            The request's id, which its signals carry.
        """
        if self._process is None:
            self.start()
        request_id = self._next_id
        self._next_id += 1
        message = to_message(request, request_id, str(self.tmp_root / f"run{request_id}"))
        self._running = request_id
        self._timeout, self._cancel_sent = request.timeout or None, False
        self._deadline.stop()
        if self.is_ready:  # else from the ready message on: the worker runs nothing before
            self._arm(unresponsive.answer_deadline(0.0, self._timeout, self.grace))
        self.output_text = ""
        self._process.write(self._session.encode(message))
        return request_id

    def discard_results_before(self, request_id: int) -> None:
        """Remove the array files of older runs; the app keeps only what it shows."""
        for path in self.tmp_root.glob("run*"):
            if path.name[3:].isdigit() and int(path.name[3:]) < request_id:
                shutil.rmtree(path, ignore_errors=True)

    # --- process events ------------------------------------------------------------------
    def _on_stdout(self, process: QProcess) -> None:
        data = bytes(process.readAllStandardOutput())
        if process is not self._process:
            return
        unsealed = len(self._session.unsealed)
        found = self._session.feed(data)
        if len(self._session.unsealed) > unsealed:  # not the worker's: ignored, and said; ask again
            lines = self._session.unsealed[unsealed:]
            self.output.emit(f"gradviz: ignored {len(lines)} line(s) the worker did not seal: {lines[0].text[:120]!r}\n")
            if self._running:  # they may have been written into the middle of its answer
                self._process.write(self._session.encode({"op": "repeat", "id": self._running}))
        for message in found:
            if isinstance(message, messages.BadLine):  # a broken worker: fail the run now, not at its timeout
                detail = {"kind": ErrorKind.PROTOCOL.value, "message": f"The worker sent {message.describe()}"}
                message = messages.error(self._running or None, None, detail)
            self._on_message(message)

    def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if messages.is_final(message) and message.get("id") and message.get("id") == self._last_answered:
            return  # an answer repeated on our asking (``repeat``) that had arrived whole already
        if kind == "ready":
            self.is_ready = True
            self.info = message
            if self._running:
                self._arm(self.grace if self._cancel_sent else unresponsive.answer_deadline(0.0, self._timeout, self.grace))
            self.ready.emit(message)
        elif kind == "progress":
            self.progress_unit = message.get("unit", "")  # what it counts, for whoever takes the count
            self.progress.emit(message["id"], message["done"], message["total"])
        elif kind == "result":
            self._answered()
            self.finished.emit(message["id"], message["result"])
        elif kind == "error":
            request = message.get("id") or self._running
            if request == self._running:
                self._answered()
            self.failed.emit(request or 0, message["error"])

    def _answered(self) -> None:
        self._last_answered, self._running = self._running, 0
        self._deadline.stop()

    def _arm(self, seconds: float | None) -> None:
        """The request in flight must be answered within ``seconds`` (None: no limit); an earlier
        deadline already set stays."""
        if seconds is None:
            return
        left = self._deadline.remainingTime() if self._deadline.isActive() else None
        ms = max(0, int(seconds * 1000))
        if left is None or ms < left:
            self._deadline.start(ms)

    def _on_deadline(self) -> None:
        """The worker did not answer in time: stopped or wedged. Kill it with its whole tree, fail
        the request, start a fresh worker (its ``ready`` sends what waits)."""
        request, process = self._running, self._process
        if not request or process is None:
            return
        kind = ErrorKind.CANCELLED if self._cancel_sent else ErrorKind.TIMEOUT
        error = unresponsive.unresponsive_error(kind, self._timeout, self.grace)
        self._process = None  # its last words, and its end, are no longer ours
        unresponsive.end_worker(int(process.processId()))
        if not process.waitForFinished(1000):
            process.kill()
            process.waitForFinished(1000)
        self._keeper.release(clean=False)
        _let_go(process)
        self._answered()
        self.start()
        self.failed.emit(request, error)

    def _on_stderr(self, process: QProcess) -> None:
        text = bytes(process.readAllStandardError()).decode("utf-8", "replace")
        if process is not self._process:
            return
        self.output_text = (self.output_text + text)[-OUTPUT_LIMIT:]
        self.output.emit(text)

    def _on_finished(self, process: QProcess, exit_code: int, status: QProcess.ExitStatus) -> None:
        if process is not self._process:  # stopped on purpose
            return
        request = self._running
        self._answered()
        how = "was killed" if status == QProcess.ExitStatus.CrashExit else f"exited with code {exit_code}"
        message = (
            f"The gradviz worker process {how}. A fresh worker has been started; your code in the editor "
            "is untouched."
        )
        _let_go(process)
        self._process = None
        self._keeper.release(clean=False)  # what the dead worker's runs started is left: ended now
        self.start()
        self.crashed.emit(request, message)


def _let_go(process: QProcess) -> None:
    """Delete a worker's QProcess once the event loop runs, its slots disconnected first.

    Its slots are lambdas holding the client: a QProcess deleted later with them still connected
    emits into a half-destroyed object and can crash the next event loop (as in a test that
    waits right after a stand-in worker is shut down).
    """
    for signal in (process.readyReadStandardOutput, process.readyReadStandardError, process.finished):
        with contextlib.suppress(RuntimeError, TypeError):
            signal.disconnect()
    process.deleteLater()
