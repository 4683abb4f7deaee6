"""The Why? panel in the real window: a failing check is swept in the background, the panel
draws the sweep for the block on screen, and its buttons start the next run."""

from __future__ import annotations

from PySide6.QtCore import Qt

from gradviz.app.why_link import TITLE
from gradviz.schema.sweep import Verdict
from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.paths import ARTIFACTS


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


# --- nothing cut at real window sizes, a Sweep button for any Function, stale marks ---

SIZES = [(1280, 720), (1366, 768), (1682, 1045), (1920, 1080)]  # 1682x1045: the default window on 1920x1080


def why_dock_problems(qtbot, window) -> list[str]:
    """What a user would see cut in the Why? dock as it is laid out now: a sideways scroll, a
    label showing fewer lines than its text, a button narrower than its text, a plot title, axis
    label or tick outside its plot, a plot too short to read."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QAbstractButton, QLabel

    from gradviz.app.panels.why_plots import FIGURE_MIN_HEIGHT
    from tests.app.layout_check import graphics_texts

    panel, area = window.why.panel, window.why.dock.widget()
    problems = []
    if area.horizontalScrollBar().maximum() > 0:
        problems.append(f"the dock scrolls sideways: panel {panel.width()} px in a {area.viewport().width()} px dock")
    for label in panel.findChildren(QLabel):
        if not label.isVisibleTo(panel) or not label.text().strip():
            continue
        if label.wordWrap():
            if label.heightForWidth(label.width()) > label.height() + 2:
                problems.append(f"label {label.text()[:40]!r}: {label.height()} px tall, needs {label.heightForWidth(label.width())}")
        elif label.minimumSizeHint().width() > label.contentsRect().width() + 2:
            problems.append(f"label {label.text()[:40]!r}: {label.width()} px wide, needs {label.minimumSizeHint().width()}")
    for button in panel.findChildren(QAbstractButton):
        if button.isVisibleTo(panel) and button.sizeHint().width() > button.width() + 1:
            problems.append(f"button {button.text()!r}: {button.width()} px wide, needs {button.sizeHint().width()}")
    for figure in (panel.error_figure, panel.remainder_figure):
        area.ensureWidgetVisible(figure, 0, 0)
        qtbot.wait(1)  # let the scroll repaint before the texts are measured
        problems += graphics_texts(panel)[1]
    for view in panel.findChildren(pg.PlotWidget):
        box = view.getPlotItem().getViewBox().sceneBoundingRect()
        if view.height() < FIGURE_MIN_HEIGHT or box.height() < 150:
            problems.append(f"plot {view.getPlotItem().titleLabel.text!r}: {view.height()} px, data area {box.height():.0f} px")
    return problems


def test_the_dock_is_not_cut_at_real_sizes_and_is_marked_stale_after_another_file(qtbot, main_window, tmp_path):
    from pytestqt.exceptions import TimeoutError as WaitTimeout

    from tests.app.why_sources import SQUARE, open_and_wait, write

    window = main_window
    window.load_builtin("buggy_linear_transpose")
    with qtbot.waitSignal(window.why.shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    panel = window.why.panel
    assert panel.result().verdict == Verdict.BACKWARD_WRONG and panel.stale_text() is None
    assert not panel.stale_label.isVisible()
    for size in SIZES:
        window.resize(*size)
        window.why.dock.show()
        window.why.dock.raise_()
        qtbot.waitUntil(lambda: panel.isVisible() and window.why.dock.width() > 0)
        problems: list[str] = []

        def settled(problems=problems) -> bool:
            problems[:] = why_dock_problems(qtbot, window)
            return not problems

        try:
            qtbot.waitUntil(settled, timeout=3000)
        except WaitTimeout:
            raise AssertionError(f"{size}: {problems}") from None
        assert panel.sweep_all_button.isVisible() and panel.sweep_all_button.isEnabled()
    # another file: the sweep on screen is of the old one, and says so
    open_and_wait(qtbot, window, write(tmp_path, "square.py", SQUARE))
    assert panel.stale_label.isVisible() and "another file" in panel.stale_text()
    assert panel.headline_text() == "Backward wrong"  # still shown, but marked


def test_a_passing_function_can_be_swept_and_goes_stale_when_code_or_settings_change(qtbot, main_window):
    window = main_window
    window.load_builtin("mul_constant")
    panel = window.why.panel
    assert panel.sweep_all_button.isVisibleTo(window.why.dock) and panel.sweep_all_button.isEnabled()  # before a run
    run_and_wait(qtbot, window)
    assert window.current.result.passed and panel.result() is None
    window.why.dock.raise_()
    with qtbot.waitSignal(window.why.shown, timeout=RUN_TIMEOUT):
        qtbot.mouseClick(panel.sweep_all_button, Qt.MouseButton.LeftButton)
    assert panel.result().verdict == Verdict.BACKWARD_RIGHT and panel.stale_text() is None
    swept_atol = window.run_settings.atol
    window.run_bar.tolerance["atol"].setValue(0.5)  # the user changes a setting
    assert panel.stale_text() and panel.stale_label.isVisible()
    window.run_bar.tolerance["atol"].setValue(swept_atol)
    assert panel.stale_text() is None  # back to what was swept
    window.editor.editor.insertPlainText("# an edit\n")
    qtbot.waitUntil(lambda: bool(panel.stale_text()))


# --- the sweep of a target, and of the block the user chose, through the real worker ---------------

TWO_FUNCTIONS = '''
import torch
from torch.autograd import Function


class First(Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


class Second(Function):
    """x * sum(y), with y's gradient twice too large."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y.sum()

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y.sum(), 2 * (grad * x).sum().expand_as(y)


def example_inputs(device, dtype):
    return (torch.randn(2, device=device, dtype=dtype, requires_grad=True),)
'''


def test_the_sweep_of_a_target_and_of_one_block_is_of_that_target_inputs_and_block(qtbot, main_window, tmp_path):
    """A target (the second Function of a file) on an inputs file: the automatic sweep after its
    failing check, then "Sweep this block cell by cell" for block (0, 1), reach the worker with
    the target, the inputs file and the block."""
    import torch

    path = tmp_path / "two_functions.py"
    path.write_text(TWO_FUNCTIONS)
    x, y = torch.randn(3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    torch.save((x.requires_grad_(), y.requires_grad_()), tmp_path / "inputs.pt")
    window, panel = main_window, main_window.why.panel
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        window.open_target(f"{path}:Second", str(tmp_path / "inputs.pt"))
    assert window.current.result.function == "Second" and not window.current.result.passed
    qtbot.waitUntil(lambda: not window.why.sweep_in_flight(), timeout=RUN_TIMEOUT)
    sweep = panel.result()
    assert sweep is not None, panel.message.text()  # a failing target is swept too
    shapes = {(b.output, b.input): b.shape for b in sweep.blocks}
    assert sweep.function == "Second" and shapes == {(0, 0): (3, 3), (0, 1): (3, 5)}  # the inputs file's shapes
    assert all(b.swept for b in sweep.blocks)  # small blocks: every one cell by cell
    assert panel.sweep_all_button.isEnabled()

    panel.select_block(0, 1)
    panel.sweep_button.click()  # what "Sweep this block cell by cell" sends (shown for an unswept block)
    assert window.why.sweep_in_flight()
    qtbot.waitUntil(lambda: not window.why.sweep_in_flight(), timeout=RUN_TIMEOUT)
    sweep = panel.result()
    assert sweep is not None, panel.message.text()
    assert sweep.function == "Second" and sweep.block(0, 1).shape == (3, 5)
    assert sweep.block(0, 1).swept and not sweep.block(0, 0).swept  # that block alone, cell by cell
    assert sweep.block(0, 1).verdict == Verdict.BACKWARD_WRONG  # y's gradient is the wrong one
