"""The large-block page computes regions on demand: the real window, its real worker.

A 10^5-element Function with one wrong derivative is checked (its Jacobian is never held); the
page's button computes the cells around the found one, drawn at the block's real indices, and
the values are those the check's search computed, so the worker rebuilt the same inputs.
"""

from __future__ import annotations

import os
import shutil

import pytest
from PySide6.QtCore import Qt

from gradviz.schema.results import REGION_SIDE, region_around
from tests.app.layout_check import cut_combo_boxes
from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.paths import ARTIFACTS, ROOT
from tests.sources import LARGE_SIN, LARGE_SIN_WRONG_AT

K = LARGE_SIN_WRONG_AT


def checked(qtbot, window):
    window.resize(1280, 720)
    window.editor.set_text(LARGE_SIN)
    run_and_wait(qtbot, window)
    panel = window.jacobians
    large = panel.current_large_block()
    assert large is not None and [(c.row, c.col) for c in large.cells] == [(K, K)]
    return panel, large


def test_the_button_computes_the_cells_around_the_worst_one_at_the_real_indices(qtbot, main_window):
    window = main_window
    panel, large = checked(qtbot, window)
    assert panel.large_page.isVisible() and not panel.plots.isVisible() and panel.shown_region() is None
    with qtbot.waitSignal(window.regions.shown, timeout=RUN_TIMEOUT):
        qtbot.mouseClick(panel.region_controls.worst_button, Qt.MouseButton.LeftButton)
    region = panel.shown_region()
    rows, cols = region_around(K, K, large.shape, REGION_SIDE)
    assert (region.row0, region.col0, region.shape) == (rows.start, cols.start, (len(rows), len(cols)))
    # the same cell, the same values as the check's search: the worker rebuilt the same inputs
    cell = large.cells[0]
    local = (K - rows.start, K - cols.start)
    assert region.comparison.analytic[local] == cell.analytic and region.comparison.numerical[local] == cell.numerical
    assert panel.plots.isVisible() and panel.large_table.rowCount() == 1
    # the region picker shows its whole label ("rows 99,984–100,015 × cols …  ✗ 1 failing"), not cut
    picker = panel.region_controls.picker
    assert picker.isVisible() and picker.currentText().startswith(f"rows {rows.start:,}–")
    assert cut_combo_boxes(window) == []
    # drawn where the cells are in the block: axes and outlines read the block's own indices
    image = panel.analytic_image.mapRectToParent(panel.analytic_image.boundingRect())
    assert (image.left(), image.top()) == (cols.start - 0.5, rows.start - 0.5)
    assert (image.width(), image.height()) == (len(cols), len(rows))
    (x0, x1), (y0, y1) = panel.plot_items[0].getViewBox().viewRange()
    assert x0 < cols.start < cols.stop - 1 < x1 and y0 < rows.start < rows.stop - 1 < y1
    assert panel.failing_outline.cells() == [(K, K)]
    assert panel.highlighted_cell() == (K, K) and panel.readout.text().startswith(f"out0[{K}] / x[{K}]")
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "large_block_region.png"
    assert window.grab().save(str(path)) and path.stat().st_size > 10_000
    shots = ROOT / "resources" / "screenshots"
    if os.environ.get("GRADVIZ_UPDATE_SCREENSHOTS") and (window.width(), window.height()) == (1280, 720):
        shutil.copyfile(path, shots / "large_block_region.png")
    panel.hover_cell(rows.start, cols.stop - 1)
    assert panel.readout.text().startswith(f"out0[{rows.start}] / x[{cols.stop - 1}]")
    panel.hover_cell(rows.stop, cols.start)  # outside the region: nothing to read out
    assert panel.highlighted_cell() == (rows.start, cols.stop - 1)


def test_a_region_outside_the_block_says_why_and_loses_nothing(qtbot, main_window):
    window = main_window
    panel, _ = checked(qtbot, window)
    with qtbot.waitSignal(window.regions.shown, timeout=RUN_TIMEOUT):
        panel.compute_around_worst()
    first = panel.shown_region()
    with qtbot.waitSignal(window.regions.failed, timeout=RUN_TIMEOUT) as failed:
        panel.request_region(99_990, 0, 32, 32)
    assert "Rows 99990..100021 are not inside block out0 / x (100,000 × 100,000)" in failed.args[0]
    assert failed.args[0] in panel.region_controls.status.text()
    assert panel.shown_region() is first and panel.regions() == [first] and panel.large_table.rowCount() == 1
    # another region from the spin boxes; both are kept, and the picker shows either
    panel.region_controls.row_box.setValue(0)
    panel.region_controls.col_box.setValue(0)
    with qtbot.waitSignal(window.regions.shown, timeout=RUN_TIMEOUT):
        qtbot.mouseClick(panel.region_controls.compute_button, Qt.MouseButton.LeftButton)
    second = panel.shown_region()
    assert (second.row0, second.col0) == (0, 0) and panel.regions() == [first, second]
    assert second.comparison.n_failing == 0 and panel.failing_outline.cells() == []
    panel.region_controls.picker.activated.emit(0)
    assert panel.shown_region() is first and panel.failing_outline.cells() == [(K, K)]
    # an edit of the code discards them: they were computed from the old code
    window.editor.set_text(LARGE_SIN + "\n# edited\n")
    assert panel.regions() == [] and panel.shown_region() is None and not panel.plots.isVisible()


@pytest.mark.slow
def test_cancel_stops_a_region_and_a_new_run_starts_clean(qtbot, main_window):
    window = main_window
    panel, _ = checked(qtbot, window)
    with qtbot.waitSignal(window.regions.failed, timeout=RUN_TIMEOUT) as failed:
        panel.request_region(0, 0, 128, 128)
        qtbot.waitUntil(lambda: window.controller.region_running, timeout=RUN_TIMEOUT)
        qtbot.mouseClick(panel.region_controls.cancel_button, Qt.MouseButton.LeftButton)
    assert "ancel" in failed.args[0] and panel.regions() == []
    assert panel.region_controls.worst_button.isEnabled() and panel.region_controls.cancel_button.isHidden()
    with qtbot.waitSignal(window.regions.shown, timeout=RUN_TIMEOUT):
        panel.compute_around_worst()
    assert len(panel.regions()) == 1
    run_and_wait(qtbot, window)
    assert panel.regions() == [] and panel.shown_region() is None
