"""A failed run marks its line in the editor without moving the user's cursor or scroll; Run → Go
to error line moves there when asked. In the real window, with a real worker."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from tests.app.focus import has_focus
from tests.app.test_main_window import run_and_wait

FAILS_IN_BACKWARD = '''
import torch
from torch.autograd import Function


class Scale(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 3 * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * gg  # NameError: the line the run marks

''' + "".join(f"# note {k}: a long file, so the view scrolls\n" for k in range(120)) + '''

def example_inputs(device, dtype):
    return (torch.randn(4, device=device, dtype=dtype, requires_grad=True),)
'''


def test_the_error_mark_leaves_the_cursor_and_the_scroll_where_the_user_had_them(qtbot, main_window):
    window = main_window
    editor = window.editor.editor
    window.editor.set_text(FAILS_IN_BACKWARD)
    line = next(k for k, text in enumerate(FAILS_IN_BACKWARD.splitlines(), 1) if "3 * gg" in text)
    # the user is typing near the end of the file, far below the line that will fail
    cursor = editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    cursor.movePosition(QTextCursor.MoveOperation.Up, n=3)
    editor.setTextCursor(cursor)
    editor.ensureCursorVisible()
    editor.setFocus()
    scroll = editor.verticalScrollBar()
    qtbot.waitUntil(lambda: scroll.value() > 0)
    where, scrolled = editor.textCursor().position(), scroll.value()
    assert editor.firstVisibleBlock().blockNumber() > line  # the failing line is out of view

    run_and_wait(qtbot, window, "run_failed")
    assert editor.error_line == line and "NameError" in window.editor.message.text()
    assert editor.textCursor().position() == where
    assert scroll.value() == scrolled

    # asked for (the button under the editor, or Run → Go to error line), the cursor goes to the
    # marked line and it comes into view
    button = window.editor.go_button
    assert button.isVisible() and button.text() == f"Go to line {line}"
    for go in (lambda: qtbot.mouseClick(button, Qt.MouseButton.LeftButton), window.actions["error_line"].trigger):
        editor.setTextCursor(cursor)
        editor.ensureCursorVisible()
        assert editor.textCursor().position() == where and not editor.viewport().rect().contains(
            editor.cursorRect(QTextCursor(editor.document().findBlockByNumber(line - 1)))
        )
        go()
        assert editor.textCursor().blockNumber() == line - 1 and editor.textCursor().positionInBlock() == 0
        assert editor.viewport().rect().contains(editor.cursorRect())
        assert has_focus(editor)
