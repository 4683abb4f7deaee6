"""The "Why?" panel renders real sweeps computed by gradviz.core (in this test process, which may
import torch; the GUI process never does), after a trip through strict JSON as from the worker."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gradviz.app.panels.why_panel import EMPTY_TEXT, VERDICT_COLOURS, WhyPanel, positive
from gradviz.core.check import check_function
from gradviz.core.loader import load_file
from gradviz.core.sweep import sweep_function, sweep_source
from gradviz.schema.library import find_builtin
from gradviz.schema.settings import CheckSettings, SweepOptions
from gradviz.schema.sweep import SweepResult, Verdict, jitter_for
from tests.core.why_functions import Abs, MatMul, Tanh, abs_inputs, random_inputs
from tests.paths import ARTIFACTS


def as_from_worker(sweep: SweepResult) -> SweepResult:
    return SweepResult.from_dict(json.loads(json.dumps(sweep.to_dict(), allow_nan=False)))


@pytest.fixture(scope="module")
def float32_sweep() -> tuple[SweepResult, object]:
    """A right tanh in float32 at gradcheck's eps: round-off, with the check's float64 re-check."""
    inputs = random_inputs((4, 5), dtype=torch.float32)
    settings = CheckSettings(dtype="float32")
    check = check_function(Tanh, inputs, settings)
    return as_from_worker(sweep_function(Tanh, inputs, settings)), check.precision


@pytest.fixture(scope="module")
def buggy_sweep() -> SweepResult:
    return as_from_worker(sweep_source(load_file(find_builtin("buggy_linear_transpose"))))


@pytest.fixture(scope="module")
def kink_sweep() -> SweepResult:
    return as_from_worker(sweep_function(Abs, abs_inputs()))


@pytest.fixture
def panel(qtbot):
    widget = WhyPanel()
    qtbot.addWidget(widget)
    widget.resize(1280, 720)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_empty_panel_says_what_to_do(panel):
    assert panel.result() is None and panel.message_text() == EMPTY_TEXT
    assert not panel.rerun_button.isEnabled() and not panel.redraw_button.isEnabled()
    assert panel.error_curves == {} and panel.remainder_curves == {}


def test_backward_wrong_is_said_in_red_and_offers_no_eps(panel, buggy_sweep):
    panel.set_result(buggy_sweep)
    assert panel.headline_text() == "Backward wrong"
    assert VERDICT_COLOURS[Verdict.BACKWARD_WRONG] in panel.headline.styleSheet()
    assert not panel.rerun_button.isEnabled() and not panel.redraw_button.isEnabled()
    assert not panel.float64_button.isVisible()
    titles = [panel.block_combo.itemText(k) for k in range(panel.block_combo.count())]
    assert titles == ["all outputs / all inputs", "out0 / input", "out0 / weight"]


def test_curves_are_the_sweeps_numbers(panel, buggy_sweep):
    panel.set_result(buggy_sweep)
    panel.select_block(0, 0)
    block = buggy_sweep.block(0, 0)
    x, y = panel.error_curves["block"].getOriginalDataset()
    np.testing.assert_allclose(x, buggy_sweep.steps)
    np.testing.assert_array_equal(y, positive(block.errors))
    x, y = panel.remainder_curves["remainder"].getOriginalDataset()
    np.testing.assert_array_equal(y, positive(block.remainder))
    for cell in block.cells:
        np.testing.assert_array_equal(panel.error_curves[cell.label].getOriginalDataset()[1], positive(cell.errors))


def test_reference_lines_have_slopes_two_and_minus_one_through_the_best_step(panel, float32_sweep):
    sweep, _ = float32_sweep
    panel.set_result(sweep)
    panel.select_block(0, 0)
    block = sweep.block(0, 0)
    for label, slope in (("slope 2: truncation", 2), ("slope −1: round-off", -1)):
        xs, ys = panel.error_curves[label].getOriginalDataset()
        measured = (np.log10(ys[1]) - np.log10(ys[0])) / (np.log10(xs[1]) - np.log10(xs[0]))
        assert measured == pytest.approx(slope)
        through = ys[0] * (block.best_eps / xs[0]) ** slope
        assert through == pytest.approx(block.errors[sweep.steps.index(block.best_eps)])


def test_eps_too_small_offers_the_suggested_eps_and_float64(panel, qtbot, float32_sweep):
    sweep, precision = float32_sweep
    panel.set_result(sweep, precision)
    assert sweep.verdict == Verdict.EPS_TOO_SMALL
    assert panel.headline_text().startswith("Backward right; eps too small")
    assert panel.rerun_button.isEnabled() and f"{sweep.best_eps:g}" in panel.rerun_button.text()
    assert "Fails only in float32" in panel.precision_label.text()
    with qtbot.waitSignal(panel.rerun_at_eps) as blocker:
        panel.rerun_button.click()
    assert blocker.args == [sweep.best_eps]
    assert panel.float64_button.isVisible()  # a button, not advice to pass a command-line flag
    with qtbot.waitSignal(panel.use_float64_requested):
        panel.float64_button.click()


def test_a_kink_offers_to_redraw_the_inputs(panel, qtbot, kink_sweep):
    panel.set_result(kink_sweep)
    assert panel.headline_text() == "Non-differentiable near this point"
    assert panel.redraw_button.isEnabled() and not panel.rerun_button.isEnabled()
    with qtbot.waitSignal(panel.redraw_requested) as blocker:
        panel.redraw_button.click()
    assert blocker.args == [jitter_for(kink_sweep.eps)]


def test_block_selection_both_ways(panel, qtbot, buggy_sweep):
    panel.set_result(buggy_sweep)
    panel.select_block(0, 1)  # the model's selection reaches the combo box
    assert panel.block_combo.currentText() == "out0 / weight"
    assert panel.headline_text() == "Backward right"
    with qtbot.waitSignal(panel.block_changed) as blocker:  # and the user's choice comes back out
        panel.block_combo.setCurrentIndex(1)
    assert blocker.args == [0, 0] and panel.block() == (0, 0)
    assert panel.headline_text() == "Backward wrong"


def test_selected_cell_is_drawn_bold(panel, buggy_sweep):
    panel.set_result(buggy_sweep)
    panel.select_block(0, 0)
    cell = buggy_sweep.block(0, 0).cells[0]
    panel.select_cell(cell.row, cell.col)
    assert panel.error_curves[cell.label].opts["pen"].widthF() == 3
    assert cell.label in panel.cell_label.text()
    panel.select_cell(10_000, 0)
    assert "not among" in panel.cell_label.text()


def test_a_block_swept_along_one_direction_offers_a_full_sweep(panel, qtbot):
    sweep = as_from_worker(sweep_function(MatMul, random_inputs((3, 3), (3, 3)), options=SweepOptions(block=(0, 0))))
    panel.set_result(sweep)
    panel.select_block(0, 1)
    assert panel.sweep_button.isVisible() and panel.error_curves == {}
    with qtbot.waitSignal(panel.sweep_requested) as blocker:
        panel.sweep_button.click()
    assert blocker.args == [(0, 1)]


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_screenshots(panel, qtbot, float32_sweep, buggy_sweep, kink_sweep, size):
    """The panel as a user sees it, at a laptop's and a desktop's size (look at these)."""
    ARTIFACTS.mkdir(exist_ok=True)
    panel.resize(*size)
    labels = (panel.headline, panel.message, panel.slopes, panel.precision_label)
    for name, sweep, precision, block in (
        ("eps", *float32_sweep, (0, 0)),
        ("wrong", buggy_sweep, None, (0, 0)),
        ("kink", kink_sweep, None, (0, 0)),
    ):
        panel.set_result(sweep, precision)
        panel.select_block(*block)
        # every wrapped text has the height its width needs: nothing clipped
        qtbot.waitUntil(lambda: all(label.height() >= label.heightForWidth(label.width()) for label in labels))
        path = ARTIFACTS / f"why_panel_{name}_{size[0]}x{size[1]}.png"
        panel.export_png(str(path))
        assert path.stat().st_size > 10_000
