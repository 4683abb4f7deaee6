"""The hint is the answer the user came for: under the verdict, whole, at every window size and in
presentation, never folded into the disclosure's "N more"; only quiz mode hides it.

Results come from the real core; sizes are a maximized window's client area under openbox."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect

from gradviz.app.panels.verdict_banner import QUIZ_HIDES_HINT, plain
from tests.app.test_jacobian_view import show
from tests.paths import ARTIFACTS

CLIENT_SIZES = ((1280, 701), (1366, 749), (1920, 1061))


def shown_whole(label) -> bool:
    """The label is on screen, tall enough for its wrapped text, and no parent clips any of it."""
    return (
        label.isVisible()
        and label.height() >= label.heightForWidth(label.width())
        and label.visibleRegion().boundingRect() == QRect(0, 0, label.width(), label.height())
    )


@pytest.mark.parametrize("size", CLIENT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_hint_is_shown_whole_under_the_verdict(qtbot, main_window, make_check_result, size):
    window = main_window
    result = make_check_result("buggy_linear_transpose")
    show(qtbot, window, result, size)
    block = window.jacobians.current_block()
    assert not block.passed and block.hints  # the real core found a hint for the failing block
    banner = window.banner
    assert not banner.is_expanded()  # the other details stay folded
    text = plain(banner.hint.text())
    assert all(hint in text for hint in block.hints)
    assert shown_whole(banner.hint), (banner.hint.size(), banner.hint.heightForWidth(banner.hint.width()))
    assert banner.hint.geometry().top() >= banner.headline.geometry().bottom()  # under the verdict
    assert not any(hint in banner.folded.full_text for hint in block.hints)  # not also in the fold
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / f"hint-{size[0]}x{size[1]}.png"))


def test_presentation_shows_the_hint_and_quiz_hides_it(qtbot, main_window, make_check_result):
    window = main_window
    result = make_check_result("buggy_linear_transpose")
    show(qtbot, window, result, CLIENT_SIZES[0])
    hints = window.jacobians.current_block().hints
    window.set_presentation(True)
    window.presentation.show_view("jacobians")  # the view the banner heads
    banner = window.banner
    qtbot.waitUntil(lambda: banner.hint.isVisible())
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "hint-presentation-1280x720.png"))
    assert all(hint in plain(banner.hint.text()) for hint in hints)
    window.actions["quiz"].trigger()  # the answers hidden: the hint with them
    assert window.view.quiz and banner.hint.text() == QUIZ_HIDES_HINT
    window.actions["quiz"].trigger()
    assert all(hint in plain(banner.hint.text()) for hint in hints)
    window.set_presentation(False)
    assert not window.in_presentation()
