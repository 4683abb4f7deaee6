"""The GUI's handle on the worker process (``python -m gradviz.worker``), via QProcess.

Everything is asynchronous: requests are written to the worker's stdin, answers arrive as
signals from its stdout, and what the user's code prints arrives on stderr. Cancel kills the
worker outright (user code may be stuck in C or in an endless loop) and starts a fresh one;
so does a crash. The window never waits on the worker.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

OUTPUT_LIMIT = 64 * 1024  # characters of user output kept per run: megabytes of print stay cheap


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


class WorkerClient(QObject):
    ready = Signal(dict)  # {"torch": version, "devices": [...], "pid": ...}
    progress = Signal(int, int, int)  # request id, done, total
    finished = Signal(int, dict)  # request id, result payload
    failed = Signal(int, dict)  # request id, error {"kind", "message", "lineno", ...}
    crashed = Signal(int, str)  # request id (0 if idle), what happened
    output = Signal(str)  # text the user's code printed

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._process: QProcess | None = None
        self._stdout = b""
        self._next_id = 1
        self._running: int = 0  # id of the request in flight, 0 if none
        self._expected_exit = False
        self.is_ready = False
        self.info: dict[str, Any] = {}
        self.output_text = ""
        self.tmp_root = Path(tempfile.mkdtemp(prefix="gradviz-"))

    # --- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Start a worker in the background; ``ready`` fires once torch is imported there."""
        self.is_ready = False
        self._stdout = b""
        process = QProcess(self)
        env = QProcessEnvironment.systemEnvironment()
        root = _package_root()
        env.insert("PYTHONPATH", os.pathsep.join(p for p in (root, env.value("PYTHONPATH")) if p))
        env.insert("PYTHONUNBUFFERED", "1")
        process.setProcessEnvironment(env)
        process.readyReadStandardOutput.connect(self._on_stdout)
        process.readyReadStandardError.connect(self._on_stderr)
        process.finished.connect(self._on_finished)
        self._process = process
        self._expected_exit = False
        process.start(sys.executable, ["-m", "gradviz.worker"])

    def shutdown(self) -> None:
        """Stop the worker and remove its temporary files (window closing)."""
        self._stop()
        shutil.rmtree(self.tmp_root, ignore_errors=True)

    def cancel(self) -> None:
        """Kill the worker mid-run and start a fresh one."""
        request = self._running
        self._stop()
        self._running = 0
        self.start()
        if request:
            self.failed.emit(request, {"kind": "cancelled", "message": "Cancelled."})

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        self._expected_exit = True
        process.finished.disconnect(self._on_finished)
        process.kill()
        process.waitForFinished(1000)
        process.deleteLater()

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
    def submit(self, op: str, **payload: Any) -> int:
        """Send a request; its answer comes as ``finished`` or ``failed`` with the returned id."""
        if self._process is None:
            self.start()
        request_id = self._next_id
        self._next_id += 1
        out_dir = self.tmp_root / f"run{request_id}"
        message = {"id": request_id, "op": op, "out_dir": str(out_dir), **payload}
        self._running = request_id
        self.output_text = ""
        self._process.write((json.dumps(message) + "\n").encode())
        return request_id

    def discard_results_before(self, request_id: int) -> None:
        """Remove the array files of older runs; the app keeps only what it shows."""
        for path in self.tmp_root.glob("run*"):
            if path.name[3:].isdigit() and int(path.name[3:]) < request_id:
                shutil.rmtree(path, ignore_errors=True)

    # --- process events ------------------------------------------------------------------
    def _on_stdout(self) -> None:
        self._stdout += bytes(self._process.readAllStandardOutput())
        *lines, self._stdout = self._stdout.split(b"\n")
        for line in lines:
            if line.strip():
                self._on_message(json.loads(line))

    def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "ready":
            self.is_ready = True
            self.info = message
            self.ready.emit(message)
        elif kind == "progress":
            self.progress.emit(message["id"], message["done"], message["total"])
        elif kind == "result":
            self._running = 0
            self.finished.emit(message["id"], message["result"])
        elif kind == "error":
            self._running = 0
            self.failed.emit(message.get("id") or 0, message["error"])

    def _on_stderr(self) -> None:
        text = bytes(self._process.readAllStandardError()).decode("utf-8", "replace")
        self.output_text = (self.output_text + text)[-OUTPUT_LIMIT:]
        self.output.emit(text)

    def _on_finished(self, exit_code: int, status: QProcess.ExitStatus) -> None:
        request = self._running
        self._running = 0
        if status == QProcess.ExitStatus.CrashExit:
            how = "crashed (killed by a signal: a segfault, abort() or an out-of-memory kill)"
        else:
            how = f"exited with code {exit_code} (os._exit or sys.exit in the code?)"
        message = (
            f"The worker process running the Function's code ended unexpectedly: it {how}. "
            "A fresh worker has been started; your code in the editor is untouched."
        )
        self._process.deleteLater()
        self._process = None
        self.start()
        self.crashed.emit(request, message)
