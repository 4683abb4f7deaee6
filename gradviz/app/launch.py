"""Start the app, or explain in one line why it cannot start here."""

from __future__ import annotations

import os
import sys


def has_display() -> bool:
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform.split(":")[0] in ("offscreen", "minimal", "vnc") or sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_app(argv: list[str]) -> int:
    if not has_display():
        print(
            "gradviz: no display found (DISPLAY is not set). Use 'gradviz check FILE' for a headless "
            "check, or start the app under Xvfb.",
            file=sys.stderr,
        )
        return 2
    from PySide6.QtWidgets import QApplication

    from gradviz.app.main_window import MainWindow

    app = QApplication.instance() or QApplication(["gradviz", *argv])
    window = MainWindow()
    window.show()
    return app.exec()
