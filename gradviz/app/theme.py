"""How the window is drawn: one text scale for every panel and an optional high-contrast palette.

``ViewSettings`` is the state (one signal per field, as the other states); ``Theme`` is the value
the panels read when it changes: point sizes through ``theme.pt(base)``, ink and pens from the
palette. Presentation mode raises the scale and turns on the high-contrast palette; the panels
never know which mode they are in, only the theme.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal
from PySide6.QtGui import QFont, QGuiApplication

SCALES = (0.8, 0.9, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0, 2.4)  # Ctrl+= / Ctrl+- step along these
PRESENTATION_SCALE = 1.3  # with the 24 px floor: most texts 24 px, headings above, the maps 300 px tall at 720 lines
PRESENTATION_MIN_PX = 24  # the smallest text a class of 100 reads from the back of a room (720-line screen)


def points_for_pixels(pixels: float) -> int:
    """The whole point size whose glyphs are at least ``pixels`` tall on the primary screen
    (96 dpi: 24 px is 18 pt)."""
    screen = QGuiApplication.primaryScreen()
    dpi = screen.logicalDotsPerInchY() if screen is not None else 96.0
    return math.ceil(pixels * 72.0 / dpi - 1e-9)


@dataclass(frozen=True)
class Theme:
    scale: float = 1.0
    high_contrast: bool = False
    min_points: int = 6  # no text smaller than this (presentation mode raises it: PRESENTATION_MIN_PX)

    def pt(self, base: float) -> int:
        """A base point size (as drawn at scale 1) at this theme's scale, never below the floor."""
        return max(6, self.min_points, round(base * self.scale))

    def font(self, base: float, *, bold: bool = False, family: QFont | None = None) -> QFont:
        font = QFont(family) if family is not None else QFont()
        font.setPointSize(self.pt(base))
        font.setBold(bold or (self.high_contrast and base >= 13))
        return font

    @property
    def ink(self) -> str:
        """Text and axes."""
        return "#000000" if self.high_contrast else "#222222"

    @property
    def muted(self) -> str:
        """Secondary text: still dark enough from the back of a room in high contrast."""
        return "#222222" if self.high_contrast else "#555555"

    @property
    def line(self) -> float:
        """Pen width of axes, edges and outlines, in pixels."""
        return 2.0 if self.high_contrast else 1.0


class ViewSettings(QObject):
    """Text scale, high contrast, the smallest text allowed (presentation mode's floor) and quiz
    mode (the buggy twins' answers hidden in the editor)."""

    scale_changed = Signal(float)
    high_contrast_changed = Signal(bool)
    min_points_changed = Signal(int)
    quiz_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._scale = 1.0
        self._high_contrast = False
        self._min_points = Theme.min_points
        self._quiz = False

    @property
    def theme(self) -> Theme:
        return Theme(self._scale, self._high_contrast, self._min_points)

    @property
    def min_points(self) -> int:
        return self._min_points

    @min_points.setter
    def min_points(self, value: int) -> None:
        value = max(int(value), Theme.min_points)
        if value != self._min_points:
            self._min_points = value
            self.min_points_changed.emit(value)

    @property
    def scale(self) -> float:
        return self._scale

    @scale.setter
    def scale(self, value: float) -> None:
        value = float(min(max(value, SCALES[0]), SCALES[-1]))
        if value != self._scale:
            self._scale = value
            self.scale_changed.emit(value)

    def step_scale(self, steps: int) -> None:
        """One step up (1) or down (-1) the ladder of SCALES from the current scale."""
        larger = [s for s in SCALES if s > self._scale + 1e-9]
        smaller = [s for s in SCALES if s < self._scale - 1e-9]
        if steps > 0 and larger:
            self.scale = larger[0]
        elif steps < 0 and smaller:
            self.scale = smaller[-1]

    @property
    def high_contrast(self) -> bool:
        return self._high_contrast

    @high_contrast.setter
    def high_contrast(self, value: bool) -> None:
        if bool(value) != self._high_contrast:
            self._high_contrast = bool(value)
            self.high_contrast_changed.emit(self._high_contrast)

    @property
    def quiz(self) -> bool:
        return self._quiz

    @quiz.setter
    def quiz(self, value: bool) -> None:
        if bool(value) != self._quiz:
            self._quiz = bool(value)
            self.quiz_changed.emit(self._quiz)

    def subscribe(self, slot) -> None:
        """Call ``slot()`` whenever the theme (scale, contrast or the smallest size) changes."""
        self.scale_changed.connect(lambda _value: slot())
        self.high_contrast_changed.connect(lambda _value: slot())
        self.min_points_changed.connect(lambda _value: slot())


HIGH_CONTRAST_QSS = """
QWidget { color: #000000; }
QMainWindow, QDockWidget > QWidget, QWidget#centre { background: #ffffff; }
QPushButton, QToolButton { border: 2px solid #000000; border-radius: 3px; padding: 2px 8px; background: #ffffff; }
QPushButton:disabled, QToolButton:disabled { color: #6b6b6b; border-color: #8c8c8c; }
QPushButton:checked, QToolButton:checked { background: #000000; color: #ffffff; }
QTabBar::tab:selected { font-weight: bold; }
"""  # black on white, framed controls: readable from the back of a lecture room


def style_sheet(theme: Theme | bool) -> str:
    """The window's style sheet: none normally, HIGH_CONTRAST_QSS in high contrast.

    Under a style sheet Qt resolves each widget's font once, when it polishes it, and then takes
    it for the widget's own: a panel's larger font no longer reaches its plain labels, buttons and
    boxes (they would stay at the application's 9 pt in presentation mode). The application attribute
    that keeps fonts propagating is set with the first style sheet."""
    if isinstance(theme, bool):
        theme = Theme(high_contrast=theme)
    if not theme.high_contrast:
        return ""
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_UseStyleSheetPropagationInWidgetStyles, True)
    return HIGH_CONTRAST_QSS
