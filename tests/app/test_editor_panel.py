"""The editor driven by keys: four-space Tab, auto-indent, Home, Find, the error marker, quiz mode."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QStyle, QStyleOptionFrame, QToolButton

from gradviz.app.panels.editor_panel import EditorPanel
from gradviz.app.theme import ViewSettings
from gradviz.schema.library import find_builtin
from tests.app.focus import has_focus


@pytest.fixture
def panel(qtbot):
    view = ViewSettings()
    widget = EditorPanel(view=view)
    widget.view_settings = view
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()
    qtbot.waitExposed(widget)
    widget.editor.setFocus()
    return widget


def cursor_to(panel, line: int, column: int) -> None:
    cursor = panel.editor.textCursor()
    block = panel.editor.document().findBlockByNumber(line - 1)
    cursor.setPosition(block.position() + column)
    panel.editor.setTextCursor(cursor)


def test_tab_inserts_spaces_to_the_next_multiple_of_four(qtbot, panel):
    panel.set_text("ab")
    cursor_to(panel, 1, 2)
    qtbot.keyClick(panel.editor, Qt.Key.Key_Tab)
    assert panel.text() == "ab  " and "\t" not in panel.text()
    qtbot.keyClick(panel.editor, Qt.Key.Key_Tab)
    assert panel.text() == "ab      "
    assert has_focus(panel.editor)  # Tab did not move the focus on


def test_tab_and_shift_tab_indent_and_dedent_a_selection(qtbot, panel):
    panel.set_text("a\nb\nc")
    panel.editor.selectAll()
    qtbot.keyClick(panel.editor, Qt.Key.Key_Tab)
    assert panel.text() == "    a\n    b\n    c"
    qtbot.keyClick(panel.editor, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert panel.text() == "a\nb\nc"


def test_enter_keeps_the_indent_and_adds_a_level_after_a_colon(qtbot, panel):
    panel.set_text("    def f(x):  # comment")
    panel.editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClick(panel.editor, Qt.Key.Key_Return)
    qtbot.keyClicks(panel.editor, "return x")
    qtbot.keyClick(panel.editor, Qt.Key.Key_Return)
    assert panel.text().splitlines() == ["    def f(x):  # comment", "        return x", "    "]


def test_home_goes_to_the_first_non_blank_then_to_the_start(qtbot, panel):
    panel.set_text("    x = 1")
    panel.editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClick(panel.editor, Qt.Key.Key_Home)
    assert panel.editor.textCursor().positionInBlock() == 4
    qtbot.keyClick(panel.editor, Qt.Key.Key_Home)
    assert panel.editor.textCursor().positionInBlock() == 0
    qtbot.keyClick(panel.editor, Qt.Key.Key_Home)
    assert panel.editor.textCursor().positionInBlock() == 4


def test_find_selects_matches_wrapping_around_and_esc_returns_to_the_editor(qtbot, panel):
    panel.set_text("alpha\nbeta\nalpha")
    panel.find()
    assert panel.find_bar.isVisible() and has_focus(panel.find_bar.field)
    qtbot.keyClicks(panel.find_bar.field, "alpha")
    assert panel.editor.textCursor().blockNumber() == 0 and panel.editor.textCursor().selectedText() == "alpha"
    qtbot.keyClick(panel.find_bar.field, Qt.Key.Key_Return)
    assert panel.editor.textCursor().blockNumber() == 2
    qtbot.keyClick(panel.find_bar.field, Qt.Key.Key_Return)
    assert panel.editor.textCursor().blockNumber() == 0  # wrapped
    panel.find_bar.field.setText("gamma")
    assert panel.find_bar.status.text() == "not found"
    qtbot.keyClick(panel.find_bar.field, Qt.Key.Key_Escape)
    assert not panel.find_bar.isVisible() and has_focus(panel.editor)


def test_editing_the_error_line_clears_the_marker_and_the_message(qtbot, panel):
    panel.set_text("x = 1\ny = (\nz = 3")
    panel.show_error("SyntaxError: '(' was never closed", 2)
    assert panel.editor.error_line == 2 and panel.message.isVisible()
    cursor_to(panel, 3, 5)
    qtbot.keyClicks(panel.editor, "0")  # another line: the marker stays
    assert panel.editor.error_line == 2
    cursor_to(panel, 2, 5)
    qtbot.keyClicks(panel.editor, ")")
    assert panel.editor.error_line is None and not panel.message.isVisible()


def test_quiz_hides_the_lines_that_give_the_bug_away(qtbot, panel, monkeypatch):
    from gradviz.app import highlighter

    # a loaded machine: every highlighting pass runs out of time after its first line
    monkeypatch.setattr(highlighter, "BUDGET_S", 0.0)
    text = find_builtin("buggy_linear_transpose").read_text(encoding="utf-8")
    panel.set_text(text)
    lines = text.splitlines()
    answer = next(k for k, line in enumerate(lines, 1) if line.startswith("BUG = "))
    code = next(k for k, line in enumerate(lines, 1) if "# BUG:" in line and line.split("#")[0].strip())
    panel.view_settings.quiz = True
    hidden = panel.editor.quiz_hidden_lines()
    assert answer in hidden and code not in hidden  # the code stays; its comment is drawn as nothing
    block = panel.editor.document().findBlockByNumber(code - 1)
    comment = lines[code - 1].index("# BUG")
    alphas = {r.start: r.format.foreground().color().alpha() for r in block.layout().formats()}
    assert alphas[comment] == 0
    assert len(hidden) < len(text.splitlines()) // 2  # the code itself stays
    assert panel.text() == text  # hidden, not removed: it still runs as written
    panel.view_settings.quiz = False
    assert panel.editor.quiz_hidden_lines() == []


def test_the_text_scale_grows_the_editor_font(qtbot, panel):
    before = panel.editor.font().pointSize()
    panel.view_settings.scale = 2.0
    assert panel.editor.font().pointSize() == 2 * before


def test_quiz_numbers_the_shown_lines_without_gaps(qtbot, panel):
    """A gap in the line numbers would say where the answer was hidden."""
    panel.set_text(find_builtin("buggy_linear_transpose").read_text(encoding="utf-8"))
    panel.view_settings.quiz = True
    editor = panel.editor
    assert editor.quiz_hidden_lines()
    labels = editor.line_labels()
    assert labels == [str(k) for k in range(1, len(labels) + 1)]
    assert len(labels) == editor.blockCount() - len(editor.quiz_hidden_lines())
    editor.repaint()
    panel.view_settings.quiz = False  # and back to the file's own numbers
    assert editor.line_labels() == [str(k) for k in range(1, editor.blockCount() + 1)]


def text_room(field) -> int:
    """Pixels a QLineEdit has for its text, from the style: its contents rectangle less the text
    margins, the clear button inside it and the 2 px QLineEdit keeps on each side."""
    option = QStyleOptionFrame()
    field.initStyleOption(option)
    rect = field.style().subElementRect(QStyle.SubElement.SE_LineEditContents, option, field)
    right = rect.right() - field.textMargins().right()
    for button in field.findChildren(QToolButton):
        right = min(right, button.geometry().left())
    return right - rect.left() - field.textMargins().left() - 4


@pytest.mark.parametrize("width", [300, 420, 600, 900])
def test_the_find_fields_hint_is_never_cut(qtbot, panel, width):
    """The placeholder shown fits the field's text area, at every width a dock gives it, and at
    presentation scale; the full wording is the tooltip."""
    bar = panel.find_bar
    for scale in (1.0, 1.3):
        panel.view_settings.scale = scale
        panel.resize(width, 400)
        panel.find()
        qtbot.waitUntil(lambda: bar.field.width() > 0 and bar.isVisible())
        qtbot.wait(0)
        field = bar.field
        room = text_room(field)
        shown = field.placeholderText()
        assert shown.startswith("Find")
        assert field.fontMetrics().horizontalAdvance(shown) <= room, (width, scale, shown, room)
        assert "Shift+Enter" in field.toolTip()
    panel.resize(1400, 400)
    qtbot.waitUntil(lambda: "Shift+Enter" in bar.field.placeholderText())  # room for all of it: all of it
