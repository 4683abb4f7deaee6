"""The main window at a projector's 1280x720, a laptop's 1366x768 and a desktop's 1920x1080, in each
main state: no two texts overlap, no text is cut off, no dock is squeezed below its content.
Run, Cancel and Present are on the run bar at every size, never in its overflow menu.
Screenshots of every state and size go to test-artifacts/ (window-1280x720.png, ...)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QToolButton

from tests.app.layout_check import clipped_labels, layout_problems
from tests.app.test_main_window import HANG, RUN_TIMEOUT, run_and_wait
from tests.paths import ARTIFACTS

SIZES = ((1280, 720), (1366, 768), (1920, 1080))


def settle(qtbot, window, size: tuple[int, int]) -> None:
    """Resize and wait until the layout and the pyqtgraph views have caught up."""
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    qtbot.wait(150)  # deferred relayouts (text fitting, label thinning) run on 0 ms timers


def check_sizes(qtbot, window, state: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    found = {}
    for size in SIZES:
        settle(qtbot, window, size)
        name = f"{state}-{size[0]}x{size[1]}.png"
        assert window.grab().save(str(ARTIFACTS / name))
        problems = layout_problems(window)
        if problems:
            found[name] = problems
    assert not found, "\n".join(f"{name}:\n  " + "\n  ".join(p) for name, p in found.items())


def test_first_launch(qtbot, main_window):
    window = main_window
    assert window.minimumSizeHint().width() <= 800 and window.minimumSizeHint().height() <= 600
    check_sizes(qtbot, window, "launch")


def test_after_a_passing_run(qtbot, main_window):
    window = main_window
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    check_sizes(qtbot, window, "window")


def test_a_failing_example(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    run_and_wait(qtbot, window)
    assert window.banner.state == "failed"
    check_sizes(qtbot, window, "failing")


def test_an_error(qtbot, main_window):
    window = main_window
    run_and_wait(qtbot, window)
    window.editor.set_text(window.editor.text().replace("def backward", "def backward(:", 1))
    run_and_wait(qtbot, window, "run_failed")
    assert window.banner.state == "error" and window.editor.message.isVisible()
    check_sizes(qtbot, window, "error")


def test_a_run_in_flight(qtbot, main_window):
    window = main_window
    run_and_wait(qtbot, window)
    window.editor.set_text(HANG)
    window.run()
    qtbot.waitUntil(lambda: window.banner.headline.text().startswith("Running"), timeout=RUN_TIMEOUT)
    assert window.jacobians.is_stale()  # the old result is marked as such
    check_sizes(qtbot, window, "running")
    window.cancel_run()
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=RUN_TIMEOUT)


@pytest.mark.parametrize("example", ["buggy_linear_transpose"])
def test_presentation_mode(qtbot, main_window, example):
    window = main_window
    window.load_builtin(example)
    run_and_wait(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_F11)
    assert window.in_presentation() and not window.menuBar().isVisible()
    check_sizes(qtbot, window, "presentation")


def run_bar_problems(window) -> list[str]:
    """Why Run, Cancel or Present is not on the run bar itself: hidden (in the overflow menu »),
    outside the bar's rectangle, or under the overflow button."""
    bar = window.run_bar
    extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
    wanted = {"Run": bar.run_button, "Cancel": bar.cancel_button}
    wanted.update({action.text(): bar.widgetForAction(action) for action in bar.mode_actions})
    problems = []
    for name, widget in wanted.items():
        rect = QRect(widget.mapTo(bar, widget.rect().topLeft()), widget.size())
        if not widget.isVisible():
            problems.append(f"{name} is in the overflow menu")
        elif not bar.rect().contains(rect):
            problems.append(f"{name} at {rect.getRect()} is outside the bar {bar.rect().getRect()}")
        elif extension is not None and extension.isVisible() and rect.intersects(extension.geometry()):
            problems.append(f"{name} at {rect.getRect()} is under the overflow button")
    for name in ("seed", "timeout"):  # sized to the value they show: that value must fit
        box = getattr(bar, name)
        needed = box.fontMetrics().horizontalAdvance(box.text())
        if box.isVisible() and box.lineEdit().width() < needed:
            problems.append(f"the {name} box shows {box.text()!r} in {box.lineEdit().width()} px; it needs {needed}")
    return problems


def test_run_cancel_and_present_stay_on_the_run_bar(qtbot, main_window):
    window = main_window
    assert [action.text() for action in window.run_bar.mode_actions] == ["Present"]
    ARTIFACTS.mkdir(exist_ok=True)
    found = {}
    for size in SIZES:
        settle(qtbot, window, size)
        assert window.grab().save(str(ARTIFACTS / f"run-bar-{size[0]}x{size[1]}.png"))
        problems = run_bar_problems(window) + clipped_labels(window)
        if problems:
            found[size] = problems
    assert not found, found
