"""Plain colourbar and axis ticks: no SI factor, no -0, whole cells never labelled twice."""

from __future__ import annotations

import pyqtgraph as pg
import pytest

from gradviz.app.plot_style import nice_spacing, plain_ticks, tick_text


@pytest.mark.parametrize("raw", [0.01, 0.0999, 0.3, 1.0, 1.2])
def test_whole_number_spacing_is_at_least_one_cell(raw):
    spacing = nice_spacing(raw, integer=True)
    assert spacing >= 1 and float(spacing).is_integer()


def test_tick_text_is_plain():
    assert tick_text(-0.0005, 0.0005) == "-0.0005"
    assert tick_text(1e-20, 0.5) == "0"  # round-off, never "-0" or "1e-20"
    assert tick_text(-1e-20, 0.5) == "0"
    assert tick_text(2e-6, 1e-6) == "2e-06"
    assert tick_text(3.0000001, 1, integer=True) == "3"


def test_an_axis_labels_a_small_range_without_a_factor(qtbot):
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    axis = plain_ticks(widget.getAxis("bottom"))
    widget.resize(400, 200)
    widget.show()
    widget.setXRange(-0.0005, 0.0005, padding=0)
    qtbot.waitExposed(widget)
    levels = axis.tickValues(*axis.range, axis.width())
    values = [v for _spacing, ticks in levels for v in ticks]
    texts = axis.tickStrings(values, 1.0, levels[0][0])
    assert texts == ["-0.0004", "-0.0002", "0", "0.0002", "0.0004"]  # not "-400 -200 0 200 400 (x1e-06)"
    assert axis.labelUnitPrefix == "" and "x0.001" not in axis.labelString()


def test_an_empty_cell_axis_does_not_repeat_zero(qtbot):
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    axis = plain_ticks(widget.getAxis("bottom"), whole_numbers=True)
    widget.resize(600, 200)
    widget.show()
    widget.setXRange(-0.5, 0.5, padding=0)
    qtbot.waitExposed(widget)
    [(spacing, values)] = axis.tickValues(*axis.range, axis.width())
    assert spacing >= 1 and len(values) <= 1
