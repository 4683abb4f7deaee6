"""Start the app, or explain in one line why it cannot start here."""

from __future__ import annotations

import argparse
import os
import sys

SCREENSHOT_TIMEOUT_MS = 120_000


def has_display() -> bool:
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform.split(":")[0] in ("offscreen", "minimal", "vnc") or sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def parse_app_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gradviz", description="gradviz desktop app")
    parser.add_argument(
        "--screenshot", metavar="PATH", help="render offscreen after the first run, save, exit"
    )
    parser.add_argument("--example", default=None, help="built-in example to open (default: the last one)")
    return parser.parse_args(argv)


def run_app(argv: list[str]) -> int:
    args = parse_app_args(argv)
    if args.screenshot and not has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if not has_display():
        print(
            "gradviz: no display found (DISPLAY is not set). Use 'gradviz check FILE' for a headless "
            "check, or start the app under Xvfb.",
            file=sys.stderr,
        )
        return 2
    from PySide6.QtWidgets import QApplication

    from gradviz.app.main_window import MainWindow

    app = QApplication.instance() or QApplication(["gradviz"])
    app.setApplicationName("gradviz")
    app.setOrganizationName("gradviz")
    window = MainWindow(auto_run=False)
    if args.example:
        window.load_builtin(args.example)
    window.show()
    if not args.screenshot:
        window.offer_recovery()
    if args.screenshot:
        _save_screenshot_when_done(app, window, args.screenshot)
    window.request_run()
    code = app.exec()
    release_window(window)
    return code


def release_window(window) -> None:
    """Delete the window's C++ side before Python tears down: left to interpreter exit, the
    order in which PySide6 and pyqtgraph objects go can segfault (seen under Xvfb in 9 of 12 runs of
    a script that showed and closed the window, none with this call)."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)


def _save_screenshot_when_done(app, window, path: str) -> None:
    from PySide6.QtCore import QTimer

    def save(*_args) -> None:
        window.grab().save(path)
        window.close()
        app.quit()

    # the memory study is requested after the first check is drawn: both are on screen then
    window.memory_shown.connect(lambda: QTimer.singleShot(200, save))
    window.run_failed.connect(lambda _message: QTimer.singleShot(200, save))
    QTimer.singleShot(SCREENSHOT_TIMEOUT_MS, save)
