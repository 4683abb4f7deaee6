"""Attacks on the clients, performed for real, for bench/robustness.py.

- a Function that SIGSTOPs the worker, under a client with a 2 s timeout: the request must fail as
  a timeout within the timeout plus the grace, and neither the worker nor the run may survive;
- the same, ended by SIGTERM of ``gradviz check`` while its worker is stopped: exit 143, nothing left;
- SIGINT to the app while "Restore unsaved work?" is open: exit 130, no traceback, the recovery
  file kept, no worker left.

Each case returns "" when gradviz withstood it, else a short reason; each cleans up after itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.schema.requests import CheckRequest, CodeSource  # noqa: E402
from gradviz.worker.client import WorkerClient  # noqa: E402
from tests.stopped_worker import STOPS_THE_WORKER  # noqa: E402

DIALOG_DRIVER = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    from gradviz.app import launch

    def poll():
        if QApplication.activeModalWidget() is not None:
            print("DIALOG", flush=True)
        else:
            QTimer.singleShot(50, poll)

    QTimer.singleShot(0, poll)
    sys.exit(launch.run_app([]))
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait(condition: Callable[[], bool], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _pids(pid_file: Path) -> tuple[int, int] | None:
    try:
        run, worker = pid_file.read_text().split()
        return int(run), int(worker)
    except (OSError, ValueError):
        return None


def _kill(pids) -> None:
    for pid in pids or ():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stopped_worker_timeout() -> str:
    with tempfile.TemporaryDirectory(prefix="attack-clients-") as tmp:
        pid_file, source = Path(tmp) / "pids", Path(tmp) / "stops.py"
        source.write_text(STOPS_THE_WORKER.format(pid_file=str(pid_file)))
        with WorkerClient(output=None) as client:
            client.grace = 2.0
            reply = client.request(CheckRequest(CodeSource(path=str(source)), timeout=2, arrays=False, graph=False))
        pids = _pids(pid_file)
        try:
            if reply.kind != "timeout":
                return f"the request ended as {reply.kind!r}, not a timeout"
            if pids is None:
                return "the Function never ran"
            if not _wait(lambda: not any(_alive(p) for p in pids), 10):
                return f"still alive after the timeout: {[p for p in pids if _alive(p)]}"
            return ""
        finally:
            _kill(pids)


def cli_sigterm_while_worker_stopped() -> str:
    with tempfile.TemporaryDirectory(prefix="attack-clients-") as tmp:
        pid_file, source = Path(tmp) / "pids", Path(tmp) / "stops.py"
        source.write_text(STOPS_THE_WORKER.format(pid_file=str(pid_file)))
        cli = subprocess.Popen(
            [sys.executable, "-m", "gradviz", "check", str(source)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_default_sigint,
        )
        pids = None
        try:
            if not _wait(lambda: _pids(pid_file) is not None, 120):
                return "the Function never ran"
            pids = _pids(pid_file)
            cli.send_signal(signal.SIGTERM)
            try:
                cli.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                return "gradviz check did not exit within 30 s of SIGTERM"
            if cli.returncode != 143:
                return f"exit status {cli.returncode}, not 143"
            if not _wait(lambda: not any(_alive(p) for p in pids), 10):
                return f"still alive after SIGTERM: {[p for p in pids if _alive(p)]}"
            return ""
        finally:
            cli.kill()
            cli.wait()
            _kill(pids)


def app_sigint_with_recovery_question() -> str:
    with tempfile.TemporaryDirectory(prefix="attack-clients-") as tmp:
        recovery = Path(tmp) / "recovery"
        recovery.mkdir(mode=0o700)
        left = recovery / "recovery-wattack.json"
        left.write_text(json.dumps({"key": "wattack", "text": "x = 1\n", "title": "untitled.py", "path": None,
                                    "saved_at": time.time()}))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen",
               "XDG_CONFIG_HOME": str(Path(tmp) / "config"), "GRADVIZ_RECOVERY_DIR": str(recovery)}
        app = subprocess.Popen([sys.executable, "-c", DIALOG_DRIVER], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, preexec_fn=_default_sigint)
        try:
            said = ""
            while "DIALOG" not in said:
                line = app.stdout.readline()
                if not line:
                    return "the app ended before the recovery question showed"
                said += line
            app.send_signal(signal.SIGINT)
            try:
                out, _ = app.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                return "the app did not quit within 30 s of SIGINT"
            if app.returncode != 130:
                return f"exit status {app.returncode}, not 130"
            if "Traceback" in out:
                return "a traceback was printed"
            if not left.exists():
                return "the recovery file was deleted"
            return ""
        finally:
            app.kill()
            app.wait()


def attack_cases() -> list[tuple[str, Callable[[], str]]]:
    if not sys.platform.startswith("linux"):
        return []
    return [
        ("stopped worker: --timeout still ends it", stopped_worker_timeout),
        ("stopped worker: SIGTERM of gradviz check", cli_sigterm_while_worker_stopped),
        ("SIGINT with 'Restore unsaved work?' open", app_sigint_with_recovery_question),
    ]
