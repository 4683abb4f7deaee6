"""Ctrl+C (SIGINT) and SIGTERM quit the real app cleanly, a modal dialog open or not.

The app runs as a subprocess (``launch.run_app``, what ``gradviz`` runs), with SIGINT at its
default as a terminal delivers it. After the signal it exits with 128 + the signal's number, prints
no traceback, leaves no worker, and keeps the unsaved text recoverable: a Ctrl+C is not an answer
to "Restore unsaved work?" and not a decision to discard what the editor holds. Left to Python,
SIGINT with the recovery question open can segfault in Qt's modal loop, and with the window open
it prints a KeyboardInterrupt traceback while the app runs on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gradviz.app.recovery import read_recovery
from tests.app.app_process import app_env, command, read_until
from tests.paths import ROOT
from tests.worker.lifecycle import interruptible, wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

EXIT_GUARD_S = 60  # far past a clean quit (the worker gets 2 s): reached only when the app runs on

# the real app with the real recovery question; says when a modal dialog is up
DIALOG_DRIVER = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    from gradviz.app import launch

    def poll():
        dialog = QApplication.activeModalWidget()
        if dialog is not None:
            print("DIALOG:", dialog.windowTitle(), flush=True)
        else:
            QTimer.singleShot(50, poll)

    QTimer.singleShot(0, poll)
    sys.exit(launch.run_app(sys.argv[1:]))
    """
)


def workers_of(pid: int) -> list[int]:
    """Worker processes the app with this pid started (they carry its pid in their environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"GRADVIZ_PARENT_PID={pid}".encode() in environ:
                found.append(int(entry.name))
    return found


def wait_for_workers(pid: int, seconds: float = 60) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = workers_of(pid)
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("the app started no worker")


def start(args: list[str], tmp_path: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        args, cwd=ROOT, env=app_env(tmp_path, **env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, preexec_fn=interruptible,
    )


def quit_with(app: subprocess.Popen, sig: int) -> str:
    """Send ``sig``; the app's remaining output once it has exited (fails if it runs on)."""
    app.send_signal(sig)
    try:
        out, _ = app.communicate(timeout=EXIT_GUARD_S)
    except subprocess.TimeoutExpired:
        app.kill()
        out, _ = app.communicate()
        raise AssertionError(f"the app did not quit after signal {sig}; it said:\n{out}") from None
    return out


def leftover_recovery(tmp_path: Path) -> Path:
    """A recovery file whose window is gone (no lock held): the next launch asks about it."""
    folder = tmp_path / "recovery"
    folder.mkdir(mode=0o700)
    file = folder / "recovery-wleftover.json"
    record = {"key": "wleftover", "text": "x = 'unsaved work'\n", "title": "untitled.py", "path": None,
              "saved_at": time.time()}
    file.write_text(json.dumps(record), encoding="utf-8")
    return file


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_with_the_recovery_question_open(tmp_path, sig, code):
    recovery = leftover_recovery(tmp_path)
    before = recovery.read_bytes()
    app = start([sys.executable, "-c", DIALOG_DRIVER], tmp_path)
    workers: list[int] = []
    try:
        said = read_until(app, "DIALOG:")
        assert "Restore unsaved work?" in said
        workers = wait_for_workers(app.pid)
        out = said + quit_with(app, sig)
        assert app.returncode == code, out
        assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
        assert recovery.read_bytes() == before  # not an answer: the text is offered again next time
        assert wait_gone(workers, 10), f"workers left: {workers}"
    finally:
        app.kill()
        app.wait()
        for pid in workers:
            if not wait_gone([pid], 0):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_with_the_window_open_keeps_the_unsaved_text(tmp_path, sig, code):
    steps = ["type:\\nunsaved = 'typed before Ctrl+C'\\n", "wait_recovery", "hold"]
    app = start(command(), tmp_path, CHILD_STEPS=json.dumps(steps))
    workers: list[int] = []
    try:
        said = read_until(app, "HOLDING")
        workers = workers_of(app.pid)
        assert workers
        file = Path(next(line for line in said.splitlines() if line.startswith("RECOVERY:")).split(" ", 1)[1])
        out = said + quit_with(app, sig)
        assert app.returncode == code, out
        assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
        assert "typed before Ctrl+C" in read_recovery(file).text
        assert wait_gone(workers, 10), f"workers left: {workers}"
    finally:
        app.kill()
        app.wait()
        for pid in workers:
            if not wait_gone([pid], 0):
                os.kill(pid, signal.SIGKILL)
