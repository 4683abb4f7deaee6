"""Presentation mode in a lecture hall: the real window at a projector's
1280x720 and at 1920x1080, driven with the keys a clicker sends, one view at a time. Measured on
screen: every text at least 24 px, the heatmaps at least 300 px tall, no text overlapping or cut,
a visible "which view of how many", A+ never pushing a view below its minimum, the quiz button
showing whether quiz is on."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication

from gradviz.app.presentation import MIN_HEATMAP_PX
from gradviz.app.presenter import VIEWS
from gradviz.app.theme import PRESENTATION_MIN_PX
from tests.app.layout_check import layout_problems
from tests.app.test_main_window import RUN_TIMEOUT
from tests.app.text_sizes import too_small
from tests.paths import ARTIFACTS

SIZES = ((1280, 720), (1920, 1080))


def settle(qtbot, window, size: tuple[int, int]) -> None:
    """The window at ``size`` with its layout and views caught up (text fitting and label
    placement run on 0-15 ms timers)."""
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    qtbot.wait(120)
    qtbot.waitUntil(window.presentation.settled)  # A+ may have taken the text a size back down
    qtbot.wait(60)


def measure(window, view: str) -> list[str]:
    """What a back row could not read in ``view``, or what is cramped there."""
    stage = window.presentation.stage
    problems = too_small(stage, PRESENTATION_MIN_PX)
    problems += layout_problems(window)
    if view == "jacobians":
        height = window.presentation.heatmap_height()
        if height < MIN_HEATMAP_PX:
            problems.append(f"heatmaps {height:.0f} px tall")
    return problems


def present_with_a_result(qtbot, window, size):
    window.load_builtin("buggy_linear_transpose")
    qtbot.keyClick(window, Qt.Key.Key_F11)
    assert window.in_presentation()
    settle(qtbot, window, size)
    stage = window.presentation.stage
    assert stage.current == "code" and stage.position.text() == f"1 / {len(VIEWS)}"
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):  # the clicker: the code to its end, run
        while stage.current == "code":
            qtbot.keyClick(stage, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: window.memory.result() is not None, timeout=RUN_TIMEOUT)
    return stage


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_each_view_alone_is_readable_from_the_back_row(qtbot, main_window, size):
    window = main_window
    stage = present_with_a_result(qtbot, window, size)
    ARTIFACTS.mkdir(exist_ok=True)
    found, seen = {}, []

    def look(view: str) -> None:
        seen.append(view)
        settle(qtbot, window, size)
        assert stage.position.text() == f"{VIEWS.index(view) + 1} / {len(VIEWS)}"
        assert stage.view_buttons[view].isChecked() and stage.page(view).isVisible()
        assert window.grab().save(str(ARTIFACTS / f"present-{view}-{size[0]}x{size[1]}.png"))
        problems = measure(window, view)
        if problems:
            found[view] = problems

    # Right, Space and Page Down as different clickers send them: worst cell, backward steps, memory
    keys = [Qt.Key.Key_Right, Qt.Key.Key_Space, Qt.Key.Key_PageDown]
    for k in range(40):
        if stage.current not in seen:
            look(stage.current)
        if stage.current == "memory":
            break
        qtbot.keyClick(stage, keys[k % len(keys)])
    # and back with Page Up / Left, one view at a time, to the code
    while stage.current != "code":
        qtbot.keyClick(stage, Qt.Key.Key_PageUp if len(seen) % 2 else Qt.Key.Key_Left)
    look("code")
    assert seen == [*VIEWS[1:], "code"]
    assert not found, "\n".join(f"{view}:\n  " + "\n  ".join(p) for view, p in found.items())
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.in_presentation()
    assert window.centralWidget() is not stage and window.docks["Code"].widget() is window.editor


@pytest.mark.slow
def test_larger_text_never_pushes_the_maps_below_their_minimum(qtbot, main_window):
    window = main_window
    stage = present_with_a_result(qtbot, window, SIZES[1])
    assert stage.current == "jacobians"
    scales = [window.view.scale]
    for size in (SIZES[1], SIZES[0]):  # A+ as often as a presenter might press it, on both screens
        for _ in range(5):
            stage.controls["bigger"].click()
            settle(qtbot, window, size)
            scales.append(window.view.scale)
            assert window.presentation.heatmap_height() >= MIN_HEATMAP_PX, (size, window.view.scale)
            assert not too_small(stage, PRESENTATION_MIN_PX)
        if size == SIZES[1]:
            assert scales[-1] > scales[0]  # on 1080 lines it does grow the text while there is room
    for _ in range(8):  # A- never goes below the room's minimum
        stage.controls["smaller"].click()
    settle(qtbot, window, SIZES[0])
    assert not too_small(stage, PRESENTATION_MIN_PX)


def test_the_quiz_button_shows_whether_quiz_is_on(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    window.set_presentation(True)
    quiz = window.presentation.stage.controls["quiz"]
    assert quiz.isCheckable() and not quiz.isChecked() and quiz.text().endswith("off")
    off = quiz.grab().toImage()
    quiz.click()
    assert window.view.quiz and quiz.isChecked() and quiz.text().endswith("on")
    on = quiz.grab().toImage()
    # visibly different: the pressed button is drawn inverted (dark), not only with another word
    dark = sum(on.pixelColor(x, on.height() // 2).lightness() < 80 for x in range(on.width()))
    dark_before = sum(off.pixelColor(x, off.height() // 2).lightness() < 80 for x in range(off.width()))
    assert dark > dark_before + on.width() // 2
    window.actions["quiz"].trigger()  # Ctrl+Shift+Q turns it off: the button follows
    assert not quiz.isChecked() and quiz.text().endswith("off")


def test_leaving_and_presenting_again_puts_every_panel_back_each_time(qtbot, main_window):
    """The stage of a past presentation must not hear the text size any more (its buttons are
    gone: a slot on them raised and left the window half restored, Esc then seemed to do nothing)."""
    window = main_window
    for _ in range(2):
        qtbot.keyClick(window, Qt.Key.Key_F11)
        assert window.in_presentation() and window.presentation.stage.isVisible()
        window.presentation.stage.controls["bigger"].click()
        qtbot.keyClick(window, Qt.Key.Key_Escape)
        assert not window.in_presentation()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # as the event loop would
        assert window.centralWidget().objectName() == "centre" and window.jacobians.isVisible()
        assert window.editor.isVisible() and window.docks["Code"].widget() is window.editor
        window.view.step_scale(1)  # after leaving: nothing listens on a deleted stage
        window.view.step_scale(-1)
