"""Keep the whole window, title bar included, on its screen's available area.

Qt sizes a window's client area; a window manager adds its frame (a title bar, borders) around
it, and tells Qt how big only once the window is mapped. A first launch sized to the screen, or a
geometry saved on a bigger screen, then puts the frame past the bottom edge: at 1280x720 the title
bar pushed the dock tabs 20 px off screen. And a top-level window's minimum size follows its
layout's: when a banner or a long error appears, Qt grows even a maximized window past the screen.

``ScreenFit`` therefore (1) sets the window's minimum size explicitly, within the screen's
available area less the frame (Qt no longer raises it from the layout; the panels shrink or
scroll instead), and (2) whenever the window is shown, moved, resized or exposed (its frame
is known then), shrinks a frame that is larger than the available area and, while the window is being
placed (shown, or its frame just changed), moves it inside. Maximized and full-screen windows
are the window manager's to size.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QMargins, QObject, QRect, QSize, Qt, QTimer
from PySide6.QtWidgets import QApplication, QWidget

_MANAGED = Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen | Qt.WindowState.WindowMinimized
_EVENTS = (QEvent.Type.Show, QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.WindowStateChange)


def available_area(window: QWidget) -> QRect:
    """The part of the window's screen that windows may use (less panels and docks)."""
    screen = window.screen() or QApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 800, 600)


def on_a_real_screen() -> bool:
    """False on Qt's offscreen and minimal platforms: their "screen" is a fixed 800x600 that
    nobody sees, and a --screenshot renders the window larger than it on purpose."""
    return QApplication.platformName() not in ("offscreen", "minimal")


def frame_margins(window: QWidget) -> QMargins:
    """How far the window manager's frame reaches beyond the client area on each side."""
    frame, inner = window.frameGeometry(), window.geometry()
    return QMargins(
        inner.left() - frame.left(),
        inner.top() - frame.top(),
        frame.right() - inner.right(),
        frame.bottom() - inner.bottom(),
    )


def fitted(frame: QRect, area: QRect, *, move: bool) -> QRect:
    """``frame`` shrunk to ``area``'s size and, with ``move``, moved inside it; without, only its
    top edge (the title bar, the handle to move it by) is kept on the area."""
    size = frame.size().boundedTo(area.size())
    result = QRect(frame.topLeft(), size)
    if move:
        result.moveLeft(max(area.left(), min(result.left(), area.right() + 1 - size.width())))
        result.moveTop(max(area.top(), min(result.top(), area.bottom() + 1 - size.height())))
    elif result.top() < area.top():
        result.moveTop(area.top())
    return result


class ScreenFit(QObject):
    """Fits ``window``'s frame to its screen's available area (see the module's docstring)."""

    def __init__(self, window: QWidget, minimum: tuple[int, int]) -> None:
        super().__init__(window)
        self.window = window
        self.minimum = minimum  # what the window asks at most, on a screen that has room for it
        self._margins = QMargins()
        self._placing = True  # until the first fit after a show or a change of frame
        self._handle: QObject | None = None  # the window's QWindow, watched for Expose
        self._timer = QTimer(self, singleShot=True, interval=0)  # after the event, with the new frame
        self._timer.timeout.connect(self.fit)
        window.installEventFilter(self)
        self._set_minimum()

    def client_limit(self) -> QSize:
        """The largest client area whose frame fits the available area."""
        area, margins = available_area(self.window), self._margins
        return QSize(
            area.width() - margins.left() - margins.right(), area.height() - margins.top() - margins.bottom()
        )

    def _set_minimum(self) -> None:
        if not on_a_real_screen():
            return
        self.window.setMinimumSize(QSize(*self.minimum).boundedTo(self.client_limit()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() in _EVENTS:
            if event.type() == QEvent.Type.Show:
                self._placing = True
                self._watch_handle()
            self._timer.start()
        elif watched is self._handle and event.type() == QEvent.Type.Expose:
            self._timer.start()  # mapped, so framed: the frame may be new with no move or resize
        return False

    def _watch_handle(self) -> None:
        """Hear when the window is exposed: a window the window manager frames around the client
        area where it was asked to be (a restored geometry) gets no Move or Resize for it."""
        handle = self.window.windowHandle()
        if handle is not None and handle is not self._handle:
            self._handle = handle
            handle.installEventFilter(self)

    def fit(self) -> None:
        window = self.window
        margins = frame_margins(window)
        if margins != self._margins:  # the window manager has framed (or reframed) the window
            self._margins = margins
            self._placing = True
            self._set_minimum()
        if not window.isVisible() or window.windowState() & _MANAGED or not on_a_real_screen():
            return
        frame = window.frameGeometry()
        target = fitted(frame, available_area(window), move=self._placing)
        self._placing = False
        if target.size() != frame.size():
            window.resize(
                target.width() - margins.left() - margins.right(),
                target.height() - margins.top() - margins.bottom(),
            )
        if target.topLeft() != frame.topLeft():
            window.move(target.topLeft())  # move() places the frame's top-left corner
