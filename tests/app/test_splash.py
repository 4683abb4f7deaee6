"""A frame on screen before the window is built: the splash, painted at once, gone once the
window shows, in the real launch (``python main.py``'s path) and in the widget itself."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication, QWidget

from bench.launch_timing import launch_to_verdict
from gradviz.app.splash import STARTING, show_splash


def visible_splashes() -> list[QWidget]:
    return [w for w in QApplication.topLevelWidgets() if w.objectName() == "gradviz-splash" and w.isVisible()]


def test_the_splash_is_painted_before_returning_and_closes_when_the_window_shows(qapp, qtbot, tmp_path):
    splash = show_splash(qapp)
    assert splash.isVisible() and splash.windowHandle().isExposed()  # on screen before the window is built
    assert splash.text() == STARTING
    assert splash.fontMetrics().capHeight() >= 12  # readable on a projector
    assert splash.fontMetrics().horizontalAdvance(STARTING) < splash.width()  # the whole line shows
    shot = tmp_path / "splash.png"
    assert splash.grab().save(str(shot)) and shot.stat().st_size > 0
    window = QWidget()
    qtbot.addWidget(window)
    window.show()
    splash.finish(window)
    qtbot.waitUntil(lambda: not visible_splashes())


@pytest.mark.slow
def test_the_real_launch_shows_the_splash_before_the_window():
    marks = launch_to_verdict()
    assert marks["splash"] < marks["window"] < marks["verdict"], marks
