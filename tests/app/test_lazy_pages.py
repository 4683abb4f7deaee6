"""Plots not on the first screen are built when first shown (``panels.lazy_page``), and what
arrived while they were unbuilt is drawn then: the window starts with less CPU, and shows the
same thing."""

from __future__ import annotations

import json

import numpy as np
import pyqtgraph as pg
import pytest

from gradviz.app.panels.lazy_page import LazyPage
from gradviz.app.panels.why_panel import WhyPanel, positive


@pytest.fixture(scope="module")
def buggy_sweep():
    """The eps sweep of a wrong backward, as the worker sends it (strict JSON)."""
    from gradviz.core.loader import load_file
    from gradviz.core.sweep import sweep_source
    from gradviz.schema.library import find_builtin
    from gradviz.schema.sweep import SweepResult

    sweep = sweep_source(load_file(find_builtin("buggy_linear_transpose")))
    return SweepResult.from_dict(json.loads(json.dumps(sweep.to_dict(), allow_nan=False)))


def test_the_stand_in_is_laid_out_as_the_view_it_builds(qtbot):
    """Nothing moves when a page is built: its hints are a pyqtgraph view's."""
    page = LazyPage(pg.PlotWidget)
    qtbot.addWidget(page)
    before = (page.minimumSizeHint(), page.sizePolicy())
    view = page.content()
    assert page.is_built() and page.content() is view  # built once
    assert before == (view.minimumSizeHint(), view.sizePolicy())
    assert before == (page.minimumSizeHint(), page.sizePolicy())
    assert page.sizeHint() == view.sizeHint()  # once built, the view's own


def test_a_page_is_built_when_first_painted_and_says_so(qtbot):
    page = LazyPage(pg.PlotWidget)
    qtbot.addWidget(page)
    built = []
    page.built.connect(built.append)
    assert not page.is_built()
    page.resize(300, 200)
    page.show()
    qtbot.waitUntil(page.is_built)
    assert built == [page.content()]
    qtbot.waitUntil(lambda: page.content().isVisible())


def test_the_why_plots_wait_for_the_dock_and_then_draw_the_sweep_that_arrived(qtbot, main_window, buggy_sweep):
    """The Why? dock is a tab behind the memory study at start: its plots are not built, a sweep
    delivered meanwhile waits in the panel, and is drawn the moment the tab is raised."""
    window, panel = main_window, main_window.why.panel
    qtbot.waitExposed(window)
    qtbot.wait(50)  # a few frames: a hidden tab is never painted
    assert panel.findChildren(pg.PlotWidget) == []
    panel.set_result(buggy_sweep)
    qtbot.wait(50)
    assert panel.findChildren(pg.PlotWidget) == []
    window.why.dock.raise_()
    qtbot.waitUntil(lambda: len(panel.findChildren(pg.PlotWidget)) == 2)
    error_view = panel.error_page.content()
    assert error_view in panel.findChildren(pg.PlotWidget)
    shown = panel.block()
    block = buggy_sweep.overall if shown == (-1, -1) else buggy_sweep.block(*shown)
    curve = panel.error_curves["block"]
    assert curve in error_view.getPlotItem().listDataItems()
    assert np.allclose(10 ** curve.getData()[1], positive(block.errors), equal_nan=True)
    assert panel.error_legend.text() and panel.remainder_curves["remainder"] in panel.remainder_plot.listDataItems()
    qtbot.waitUntil(lambda: error_view.isVisible())


def test_asking_for_a_plot_builds_it_drawn(qtbot, buggy_sweep):
    """An export (or any code) that needs a plot gets it drawn, shown or not."""
    panel = WhyPanel()
    qtbot.addWidget(panel)
    panel.set_result(buggy_sweep)
    assert not panel.error_page.is_built() and not panel.remainder_page.is_built()
    plot = panel.error_plot
    assert panel.error_page.is_built() and panel.error_curves["block"] in plot.listDataItems()
    assert not panel.remainder_page.is_built()
    assert panel.remainder_curves["remainder"] in panel.remainder_plot.listDataItems()
