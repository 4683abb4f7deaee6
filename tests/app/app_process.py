"""A real gradviz app process for tests: ``gradviz.app.launch.run_app`` (what ``gradviz`` runs),
driven by a few steps and reporting what it did on stdout.

Before the app starts, the driver patches two things only: the modal questions and warnings are
answered (``CHILD_ANSWER`` to the list of unsaved work to restore, default Yes: restore the newest;
No: discard them all; Later: keep them; ``CHILD_UNSAVED`` to saving changes, default Discard) and printed (``ASKED:``/``WARNED:``), and every check the window asks the worker for
is printed (``RUN: <filename>``). Once the window is idle (nothing being read, the worker
ready) and ``settle_ms`` has passed (time for anything that would run by itself to start), it
performs the steps:

- ``type:TEXT``: type TEXT at the end of the editor (``\\n`` for a new line);
- ``wait_recovery``: wait until the recovery file holds the text (prints ``RECOVERY: <file>``);
- ``autosave``: autosave now and wait for it;
- ``hide:TITLE``: hide the dock called TITLE; ``dtype:NAME``: choose it in the run bar;
- ``allow_known``: tick Run → "Run the last file at launch if I ran it before";
- ``wait_saved``: wait until the debounced settings save has happened (prints ``SAVED``);
- ``run``: press Run and wait for the result or the failure;
- ``state``: print ``STATE: {json}`` (text, title, runs, notices, settings, docks);
- ``quit``: close the window cleanly; ``hold``: keep running until killed;
- ``crash:MS``: the app kills itself with SIGKILL MS milliseconds later (its event loop and threads
  run meanwhile, as they would until a real crash).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.paths import ROOT

DRIVER = textwrap.dedent(
    r'''
    import json, os, sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    def say(*parts):
        print(*parts, flush=True)

    ANSWER = os.environ.get("CHILD_ANSWER", "Yes")  # to "Restore unsaved work?"
    UNSAVED = os.environ.get("CHILD_UNSAVED", "Discard")  # to "Unsaved changes" (Save, Discard, Cancel)

    def answer(*a, **k):
        say("ASKED:", a[2].replace("\n", " "))
        return getattr(QMessageBox.StandardButton, UNSAVED if a[1] == "Unsaved changes" else ANSWER)

    QMessageBox.question = staticmethod(answer)

    from gradviz.app.recovery_dialog import RecoveryDialog

    def answer_recovery(dialog):  # Yes: restore the newest; No: discard them all; else keep for later
        say("ASKED:", dialog.message())
        if ANSWER == "Yes":
            dialog.select(0); dialog.restore_selected()
        elif ANSWER == "No":
            dialog.discard_all(confirm=False)
        if dialog.result() == 0:
            dialog.reject()
        return dialog.result()

    RecoveryDialog.exec = answer_recovery
    QMessageBox.warning = staticmethod(lambda *a, **k: say("WARNED:", a[2].replace("\n", " ")))

    from gradviz.app import launch
    from gradviz.app.run_controller import RunController

    RUNS = []
    _run_check = RunController.run_check

    def counted(self, request):
        RUNS.append(request.code.filename)
        say("RUN:", request.code.filename)
        return _run_check(self, request)

    RunController.run_check = counted
    STEPS = json.loads(os.environ.get("CHILD_STEPS", '["state", "quit"]'))
    SETTLE_MS = int(os.environ.get("CHILD_SETTLE_MS", "1500"))

    def window():
        from gradviz.app.main_window import MainWindow
        found = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        return found[0] if found else None

    def later(ms, fn):
        QTimer.singleShot(ms, fn)

    def wait(condition, then, limit_ms=120_000):
        def poll(left=limit_ms):
            if condition():
                then()
            elif left <= 0:
                say("TIMEOUT"); QApplication.instance().exit(3)
            else:
                later(50, lambda: poll(left - 50))
        poll()

    def state(w):
        from gradviz.app.window_layout import MEMORY_DOCK
        return {
            "text": w.editor.text(), "title": w.windowTitle(), "modified": w.modified, "runs": RUNS,
            "notices": w.source.notices, "run": w.run_settings.to_dict(),
            "path": str(w.document.path) if w.document.path else None, "builtin": w.document.builtin_name,
            "memory_dock_visible": w.docks[MEMORY_DOCK].isVisible(), "recovery": str(w.recovery.file),
        }

    def step(queue):
        w = window()
        if not queue:
            return
        head, rest = queue[0], queue[1:]
        go = lambda: step(rest)
        kind, _, arg = head.partition(":")
        if kind == "type":
            editor = w.editor.editor
            editor.moveCursor(editor.textCursor().MoveOperation.End)
            editor.insertPlainText(arg.replace("\\n", "\n"))
            go()
        elif kind == "wait_recovery":
            text = w.editor.text()
            def kept():
                from gradviz.app.recovery import read_recovery
                try:
                    return read_recovery(w.recovery.file).text == text
                except ValueError:  # RecoveryDamaged: not there yet
                    return False
            wait(kept, lambda: (say("RECOVERY:", w.recovery.file), go()))
        elif kind == "autosave":
            w.source.autosave(); w.source.flush_autosave(); later(200, go)
        elif kind == "hide":
            w.docks[arg].hide(); go()
        elif kind == "dtype":
            w.run_bar.dtype.setCurrentText(arg); go()
        elif kind == "allow_known":
            w.source.run_known_action.setChecked(True); go()
        elif kind == "wait_saved":
            later(200, lambda: wait(lambda: not w.layout_saver.pending, lambda: (say("SAVED"), go())))
        elif kind == "run":
            done = []
            w.result_shown.connect(lambda: done.append("result"))
            w.run_failed.connect(lambda m: done.append("failed"))
            w.run()
            wait(lambda: bool(done), go)
        elif kind == "state":
            say("STATE:", json.dumps(state(w))); go()
        elif kind == "quit":
            w.close(); QApplication.instance().quit()
        elif kind == "hold":
            say("HOLDING")
        elif kind == "crash":
            say("CRASHING")
            later(int(arg), lambda: os.kill(os.getpid(), 9))

    def start():
        w = window()
        if w is None:
            later(50, start)
            return
        wait(lambda: not w.source.loader.busy and w.worker.is_ready,
             lambda: later(SETTLE_MS, lambda: step(STEPS)))

    QTimer.singleShot(0, start)
    sys.exit(launch.run_app(sys.argv[1:]))
    '''
)


# The driver's default pause once the window is idle (``CHILD_SETTLE_MS``, 1.5 s) gives anything
# that would run by itself at launch time to start. Tests that assert nothing about what runs at
# launch pass this instead: their steps start as soon as the window is idle.
QUICK = {"CHILD_SETTLE_MS": "200"}


def app_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A fresh user for the app: its own config folder (settings) and recovery folder."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "GRADVIZ_RECOVERY_DIR": str(tmp_path / "recovery"),
        **extra,
    }


def settings_file(tmp_path: Path) -> Path:
    """Where the app of ``app_env`` keeps its settings."""
    return tmp_path / "config" / "gradviz" / "gradviz.conf"


def command(*args: str, prefix: tuple[str, ...] = ()) -> list[str]:
    return [*prefix, sys.executable, "-c", DRIVER, *args]


def start_app(tmp_path: Path, *args: str, steps: list[str], prefix: tuple[str, ...] = (), **env: str):
    """Start the app process; it runs ``steps`` once idle."""
    environment = app_env(tmp_path, CHILD_STEPS=json.dumps(steps), **env)
    return subprocess.Popen(
        command(*args, prefix=prefix), cwd=ROOT, env=environment, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )


def run_app(tmp_path: Path, *args: str, steps: list[str], timeout: float = 180, **env: str) -> tuple[int, str]:
    """Run the app to the end of ``steps`` (which should end in ``quit``): its exit code and output."""
    child = start_app(tmp_path, *args, steps=steps, **env)
    try:
        out, _ = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, out


def read_until(child: subprocess.Popen, marker: str, timeout: float = 180) -> str:
    """The child's output up to and including the first line that starts with ``marker``.

    Read from the pipe's descriptor, not its buffered text stream: a ``readline`` would pull later
    lines into the stream's buffer, where ``select`` no longer sees them."""
    fd = child.stdout.fileno()
    received = b""
    deadline = time.monotonic() + timeout
    while True:
        lines = received.decode("utf-8", "replace").splitlines(keepends=True)
        for k, line in enumerate(lines):
            if line.startswith(marker) and line.endswith("\n"):
                return "".join(lines[: k + 1])
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        received += chunk
    raise AssertionError(f"no {marker!r} from the app; it said:\n{received.decode('utf-8', 'replace')}")


def kill_9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def states(output: str) -> list[dict]:
    return [json.loads(line.split(":", 1)[1]) for line in output.splitlines() if line.startswith("STATE:")]


def lines(output: str, prefix: str) -> list[str]:
    return [line[len(prefix):].strip() for line in output.splitlines() if line.startswith(prefix)]
