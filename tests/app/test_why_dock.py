"""The Why? panel in the real window: a failing check is swept in the background, the panel
draws the sweep for the block on screen, and its buttons start the next run."""

from __future__ import annotations

from PySide6.QtCore import Qt

from gradviz.app.why_link import TITLE
from gradviz.schema.sweep import Verdict
from tests.app.conftest import ARTIFACTS
from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait


def test_a_failing_example_is_swept_and_float64_reruns(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    window.run_settings.dtype = "float32"
    with qtbot.waitSignal(window.why.shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    panel = window.why.panel
    sweep = panel.result()
    assert sweep is not None and sweep.overall.verdict == Verdict.BACKWARD_WRONG
    assert panel.headline_text() and not window.controller.busy  # the sweep never held Run back
    block = window.jacobians.current_block()
    assert panel.block() == (block.output, block.input)  # the block on screen
    assert window.why.dock.toggleViewAction() in window._view_menu.actions() and window.why.dock.windowTitle() == TITLE
    window.why.dock.raise_()
    qtbot.waitUntil(panel.isVisible)
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "why-dock.png"))
    # float32 failed: "Re-check in float64" sets the run bar's dtype and runs
    assert panel.float64_button.isEnabled()
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        qtbot.mouseClick(panel.float64_button, Qt.MouseButton.LeftButton)
    assert window.run_settings.dtype == "float64" and window.current.result.dtype == "float64"


def test_a_passing_check_sends_no_sweep(qtbot, main_window):
    window = main_window
    window.load_builtin("mul_constant")
    run_and_wait(qtbot, window)
    assert window.current.result.passed
    assert window.why.panel.result() is None and not window.controller.sweep_running
