"""Start the app, or explain in one line why it cannot start here."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gradviz.protocol.display import display_problem

if TYPE_CHECKING:  # Qt is imported only once the app is sure to start
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from gradviz.app.main_window import MainWindow

SCREENSHOT_TIMEOUT_MS = 120_000


def parse_app_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gradviz", description="gradviz desktop app")
    parser.add_argument(
        "--screenshot", metavar="PATH", help="render offscreen after the first run, save, exit"
    )
    parser.add_argument("--example", default=None, help="built-in example to open (default: the last one)")
    parser.add_argument("path", nargs="?", help="a .py file or a .gradviz session to open (nothing runs until Run)")
    parser.add_argument("--target", help="open this Function and run it: package.module:Name or FILE.py:Name")
    parser.add_argument("--inputs", metavar="FILE", help="with --target: its arguments, saved with torch.save")
    parser.add_argument("--settings", metavar="FILE", help="with --target: the check's settings, as JSON")
    return parser.parse_args(argv)


def refuse_arguments(args: argparse.Namespace) -> str | None:
    """One line saying what is wrong with the command line, before Qt starts; None when it is fine."""
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.settings import CheckSettings

    if args.path and not Path(args.path).is_file():
        return f"gradviz: cannot open {args.path}: no such file."
    if (args.inputs or args.settings) and not args.target:
        return "gradviz: --inputs and --settings go with --target."
    for name in ("inputs", "settings"):
        value = getattr(args, name)
        if value and not Path(value).is_file():
            return f"gradviz: --{name} {value}: no such file."
    if args.settings:
        try:
            CheckSettings.from_dict(json.loads(Path(args.settings).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, GradvizError) as exc:
            return f"gradviz: --settings {args.settings} is not gradviz settings: {getattr(exc, 'message', exc)}"
    return None


def open_requested(window, args: argparse.Namespace) -> bool:
    """Open what the command line names; True when the window shows (or is reading) it: a file
    or session waits for Run, a target runs by itself. Nothing else runs then.

    A target needs ``window.open_target(target, inputs_path, settings)``; until the window has
    it, one line says so and the window starts as usual.
    """
    if args.path:
        path = Path(args.path)
        if path.suffix == ".gradviz":
            window.open_session(path)  # read off the GUI thread; a refusal is one dialog
        else:
            window.open_file(path)
        return True
    if args.target:
        open_target = getattr(window, "open_target", None)
        if open_target is None:
            print(
                f"gradviz: this window cannot open targets yet, so {args.target} is not shown; run "
                f"'gradviz check {args.target}' for its verdict.",
                file=sys.stderr,
            )
            return False
        settings = json.loads(Path(args.settings).read_text(encoding="utf-8")) if args.settings else None
        open_target(args.target, args.inputs, settings)
        return True
    return False


def run_app(argv: list[str]) -> int:
    """The app's exit status: 0, 2 when it cannot start, 130 after Ctrl+C, 143 after SIGTERM."""
    args = parse_app_args(argv)
    refused = refuse_arguments(args)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    if args.screenshot and display_problem() is not None:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    problem = display_problem()  # connects to the display server: a stale DISPLAY is no display
    if problem is not None:
        print(
            f"gradviz: no display found ({problem}). Use 'gradviz check FILE' for a headless "
            "check, display a gradviz.check report in a notebook, or start the app under Xvfb.",
            file=sys.stderr,
        )
        return 2
    from gradviz.protocol.launch import NoTempFolder, fall_back_temp_folder

    try:
        note = fall_back_temp_folder()  # before the window's worker makes its result folder
    except NoTempFolder as exc:
        print(f"gradviz: {exc.message}", file=sys.stderr)
        return 2
    if note:
        print(f"gradviz: {note}", file=sys.stderr)
    args.temp_note = note
    from gradviz.app.quit_signals import QuitOnSignal

    quitter = QuitOnSignal()  # from here on a Ctrl+C or SIGTERM quits cleanly, never raises
    try:
        return _run(args, quitter)
    finally:
        quitter.close()


def _run(args: argparse.Namespace, quitter) -> int:
    splash = None
    if not args.screenshot:  # a frame on screen while the window is built and the worker imports torch
        from gradviz.app.splash import show_splash

        splash = show_splash(application())
    app, window = make_window()
    # every event loop ends, the main one and a dialog's (QApplication.exit ends them all)
    quitter.watch(lambda signum: app.exit(128 + signum))
    if args.example:
        window.load_builtin(args.example)
    window.show()
    if splash is not None:
        splash.finish(window)
    if getattr(args, "temp_note", None):
        window.statusBar().showMessage(args.temp_note)
    if not args.screenshot and not (args.path or args.target) and not quitter.received:
        window.offer_recovery()  # restored text is shown, never run
    code = _start(app, window, args) if not quitter.received else 0
    if quitter.received:  # no closeEvent: nothing is asked, and no recovery file is cleared
        code = quitter.exit_code
        _leave_on_signal(window)
    release_window(window)
    return code


def _start(app, window, args: argparse.Namespace) -> int:
    """What the command line asks for, then the event loop; its exit code."""
    if args.screenshot:
        _save_screenshot_when_done(app, window, args.screenshot)
    if not open_requested(window, args):
        # only a built-in example runs by itself: the last file, a session's code or recovered
        # text waits for Run (unless the user allowed files they ran before, unchanged)
        window.source.when_idle(lambda: _run_at_launch(app, window, args.screenshot))
    elif args.screenshot and not args.target:  # a file or session: nothing runs, so show it as read
        window.source.when_idle(lambda: _run_at_launch(app, window, args.screenshot, run=False))
    return app.exec()


def _leave_on_signal(window) -> None:
    """Quit after Ctrl+C or SIGTERM: unsaved text stays recoverable (written now, so the last
    keystrokes are in it), the worker and everything it started are stopped."""
    if window.modified:
        window.source.autosave()
        window.source.flush_autosave(timeout=5.0)
    window.worker.shutdown()


def application() -> QApplication:
    """The one QApplication, named for QSettings (made on first call)."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["gradviz"])
    app.setApplicationName("gradviz")
    app.setOrganizationName("gradviz")
    return app  # type: ignore[return-value]


def make_window(settings: QSettings | None = None, *, auto_run: bool = False) -> tuple[QApplication, MainWindow]:
    """(QApplication, MainWindow), the worker started first: it imports torch (about a second)
    while this process imports Qt, pyqtgraph and the window (0.6 s), not after."""
    from gradviz.app.worker_client import WorkerClient

    app = application()
    worker = WorkerClient()
    worker.start()
    from gradviz.app.main_window import MainWindow

    return app, MainWindow(settings, auto_run=auto_run, worker=worker)


def release_window(window) -> None:
    """Delete the window's C++ side before Python tears down: left to interpreter exit, the
    order in which PySide6 and pyqtgraph objects go can segfault (seen under Xvfb in 9 of 12 runs of
    a script that showed and closed the window, none with this call)."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)


def _run_at_launch(app, window, screenshot: str | None, *, run: bool = True) -> None:
    if (run and window.run_at_launch()) or not screenshot:
        return
    from PySide6.QtCore import QTimer

    QTimer.singleShot(500, lambda: _save_screenshot(app, window, screenshot))  # nothing runs: show it as it is


def _save_screenshot(app, window, path: str) -> None:
    if window.isVisible():
        saved = window.grab().save(path)
        window.close()
        if not saved:  # a folder removed since launch, a full disk: never exit 0 with no file
            print(f"gradviz: error: could not write the screenshot to {path}.", file=sys.stderr)
            app.exit(2)
            return
    app.quit()


def _save_screenshot_when_done(app, window, path: str) -> None:
    from PySide6.QtCore import QTimer

    from gradviz.app.window_layout import DEFAULT_SIZE

    window.resize(*DEFAULT_SIZE)  # slide-sized whatever the screen (offscreen's is 800x600)

    def save(*_args) -> None:
        _save_screenshot(app, window, path)

    # the memory study is requested after the first check is drawn: both are on screen then
    window.memory_shown.connect(lambda: QTimer.singleShot(200, save))
    window.run_failed.connect(lambda _message: QTimer.singleShot(200, save))
    QTimer.singleShot(SCREENSHOT_TIMEOUT_MS, save)
