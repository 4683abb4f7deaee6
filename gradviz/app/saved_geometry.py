"""Put a restored window back exactly where it was saved.

``QWidget.restoreGeometry`` second-guesses the saved position: it takes the title bar to be the
style's ``PM_TitleBarHeight`` tall (24 px with Fusion) and, when the saved client area starts
less than that below the top of the screen, moves it down to 1 px + 24 px. Under a window
manager whose title bar is shorter (openbox's: 20 px), a window saved at the top of the screen
(client at y = 20, frame at y = 0) therefore came back 5 px lower on every relaunch, its bottom
frame off screen when it filled the screen's height (1280x720, 1366x768).

So Qt's restore still checks the blob and picks the screen and the window state, and then the
saved client rectangles themselves are applied where they fit the screen they are on: the
window's geometry for a normal window, the normal geometry (what un-maximizing brings back) for
a maximized one. A blob from another screen is left to Qt and ``ScreenFit``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

_MAGIC = 0x1D9D0CB  # QWidget::saveGeometry's first four bytes
_HEADER = struct.Struct(">IHH")  # magic, major and minor version (QDataStream is big-endian)
_RECT = struct.Struct(">iiii")  # a QRect as left, top, right, bottom
_TAIL = struct.Struct(">iBBi")  # screen number, maximized, full screen, the screen's width


@dataclass(frozen=True)
class SavedGeometry:
    """What a version-3 ``saveGeometry`` blob holds (client rectangles exclude the frame)."""

    frame: tuple[int, int, int, int]  # x, y, width, height, the frame included
    normal: tuple[int, int, int, int]  # the client area un-maximizing restores
    geometry: tuple[int, int, int, int]  # the client area as it was
    maximized: bool
    full_screen: bool


def _rect(blob: bytes, offset: int) -> tuple[int, int, int, int]:
    left, top, right, bottom = _RECT.unpack_from(blob, offset)
    return left, top, right - left + 1, bottom - top + 1


def read_geometry(blob: bytes) -> SavedGeometry | None:
    """The rectangles of a Qt 6 ``saveGeometry`` blob; None for any other blob."""
    size = _HEADER.size + 3 * _RECT.size + _TAIL.size
    if len(blob) < size:
        return None
    magic, major, _minor = _HEADER.unpack_from(blob, 0)
    if magic != _MAGIC or major != 3:
        return None
    offset = _HEADER.size
    frame, normal = _rect(blob, offset), _rect(blob, offset + _RECT.size)
    _screen, maximized, full_screen, _width = _TAIL.unpack_from(blob, offset + 2 * _RECT.size)
    geometry = _rect(blob, offset + 2 * _RECT.size + _TAIL.size)
    return SavedGeometry(frame, normal, geometry, bool(maximized), bool(full_screen))


def _on_a_screen(rect: QRect) -> bool:
    """Whether ``rect`` lies wholly on the available area of the screen it is on."""
    screen = QGuiApplication.screenAt(rect.center())
    return screen is not None and screen.availableGeometry().contains(rect)


def place_as_saved(window: QWidget, saved: SavedGeometry) -> bool:
    """After ``restoreGeometry``: the saved client rectangle applied as it was, where it (and, for
    a normal window, its saved frame) fits its screen. True when it was applied."""
    if saved.full_screen:
        return False
    client = QRect(*(saved.normal if saved.maximized else saved.geometry))
    if not client.isValid() or not _on_a_screen(client):
        return False
    if not saved.maximized and not _on_a_screen(QRect(*saved.frame)):
        return False
    state = window.windowState()
    if state & Qt.WindowState.WindowMaximized:  # Qt keeps the geometry before maximizing as normal
        window.setWindowState(state & ~Qt.WindowState.WindowMaximized)
        window.setGeometry(client)
        window.setWindowState(state)
    else:
        window.setGeometry(client)
    return True
