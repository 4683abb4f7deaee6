"""The figure-panel protocol: the window offers a panel's figures for export when it is a
``FigurePanel`` (``figures()`` and ``export``), and every figure it names can be written."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel

from gradviz.app.figures import DEFAULT_SIZE, EXPORT_WIDTH, FigurePanel, slide_size
from gradviz.app.panels.graph_panel import GraphPanel
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.panels.memory_panel import MemoryPanel
from gradviz.app.panels.stale_note import StaleNote
from gradviz.app.panels.why_panel import WhyPanel


@pytest.mark.parametrize("kind", [JacobianPanel, GraphPanel, MemoryPanel])
def test_every_figure_panel_is_one(qtbot, kind):
    panel = kind()
    qtbot.addWidget(panel)
    assert isinstance(panel, FigurePanel)
    assert panel.figures() and all(isinstance(name, str) for name in panel.figures())


def test_a_widget_without_figures_is_not_one(qtbot):
    label, why = QLabel(), WhyPanel()  # the Why? panel's figures are offered by WhyLink's wrapper
    for widget in (label, why):
        qtbot.addWidget(widget)
        assert not isinstance(widget, FigurePanel)


def test_one_export_width():
    assert DEFAULT_SIZE[0] == EXPORT_WIDTH == slide_size(0.5)[0]
    assert slide_size(0.45) == (EXPORT_WIDTH, round(EXPORT_WIDTH * 0.45))


def test_the_stale_note_shows_only_with_a_reason(qtbot):
    note = StaleNote()
    qtbot.addWidget(note)
    note.show()
    note.set_reason("The code changed since this run.")
    assert note.isVisible() and note.text() == "The code changed since this run."
    note.set_reason(None)
    assert not note.isVisible() and note.text() == ""
