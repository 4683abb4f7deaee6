"""A frame on screen while the window is built and the worker imports torch.

Building the window (pyqtgraph, the panels) takes about a second on an idle machine and several
beside busy processes; the worker's torch import as long again. A splash shown as soon as Qt is
up tells the user the launch worked; the window replaces it the moment it is shown. It is a
frameless label, not a QSplashScreen: QSplashScreen.show waits up to a second for the window
manager (measured under openbox), which is the delay the splash is there to hide.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel, QWidget

STARTING = "gradviz: starting the window and torch…"
SIZE = (520, 120)
EXPOSE_WAIT_S = 0.5  # at most this long for the display to show the frame before the window is built


class Splash(QLabel):
    """The starting frame: one line, centred on the screen."""

    def __init__(self) -> None:
        super().__init__(STARTING)
        self.setObjectName("gradviz-splash")
        self.setWindowTitle(STARTING)  # not the window's title: tools that look for the window skip it
        self.setWindowFlags(Qt.WindowType.SplashScreen | Qt.WindowType.FramelessWindowHint)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet("QLabel#gradviz-splash { background: #20262e; color: #f0f0f0; font-size: 16pt; }")
        self.resize(*SIZE)

    def finish(self, window: QWidget) -> None:
        """Close once ``window`` is shown (it is, when the launch calls this)."""
        del window
        self.close()
        self.deleteLater()


def show_splash(app: QApplication) -> Splash:
    """The starting frame, shown and painted before this returns.

    Args:
        app: the application (the window is built in it next).

    Returns:
        The splash; ``finish(window)`` closes it once the window shows.
    """
    splash = Splash()
    screen = app.primaryScreen()
    if screen is not None:
        splash.move(screen.availableGeometry().center() - splash.rect().center())
    splash.show()
    deadline = time.monotonic() + EXPOSE_WAIT_S
    while (handle := splash.windowHandle()) is not None and not handle.isExposed() and time.monotonic() < deadline:
        app.processEvents()
    app.processEvents()  # painted now, not when the event loop first turns after the window is built
    return splash
