"""The code editor: Pygments highlighting, line numbers, the failing line marked with its message.

It edits Python as a Python editor does: Tab inserts four spaces (a real tab would later fail
with "inconsistent use of tabs"), Shift+Tab and Tab on a selection dedent and indent lines,
Enter keeps the indentation and adds a level after a ":", Home goes to the first non-blank
character (again: to the start of the line), Ctrl+F finds. The error marker goes away as soon as
its line is edited. In quiz mode the buggy twins' answers (``BUG = ...`` lines, ``# BUG:``
comments and docstrings) are hidden from view, never from the text that runs or is saved; in a
document over QUIZ_MAX_LINES lines nothing is hidden, so a key never walks a huge document.

The text is kept character for character as the file holds it (``file_text``): its BOM, its line
ending, U+00A0, U+2028 and the rest, which ``toPlainText`` would change. ``text`` is what Run
checks and ``saved_text`` what Save writes; a key press copies neither out of the document
(``version`` names the text by its revision instead).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QPainter,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.code_version import CodeVersion
from gradviz.app.editor_limits import MAX_HIGHLIGHT_LINES, QUIZ_MAX_LINES
from gradviz.app.file_text import TextForm, file_text, from_editor, to_editor
from gradviz.app.highlighter import PythonHighlighter
from gradviz.app.panels.find_bar import FindBar
from gradviz.app.theme import ViewSettings

ERROR_BACKGROUND = QColor("#ffd7d7")
GUTTER_BACKGROUND = QColor("#f3f3f3")
GUTTER_TEXT = QColor("#999999")
ERROR_MARK = QColor("#d0312d")
INDENT = "    "
EDITOR_POINTS = 11
BUG_LINE = re.compile(r"^\s*(BUG\s*=|#\s*BUG\b)")  # a whole line that gives the answer away


class LineNumberArea(QWidget):
    def __init__(self, editor: CodeEditor) -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event) -> None:
        self.editor.paint_gutter(event)


class CodeEditor(QPlainTextEdit):
    """QPlainTextEdit (undo/redo built in) with a line-number gutter and an error line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSize(EDITOR_POINTS)
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self.error_line: int | None = None
        self._quiz = False  # quiz mode is on
        self._quiz_active = False  # ...and hides lines in this document (it is short enough)
        self._marked: tuple[int, str] = (0, "")  # block count and text of the marked line when marked
        self._gutter = LineNumberArea(self)
        self.highlighter = PythonHighlighter(self.document())
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._on_update_request)
        self.document().contentsChange.connect(self._on_contents_change)
        self._update_gutter_width()

    # --- Python editing keys ---------------------------------------------------------------
    def keyPressEvent(self, event) -> None:
        key, mods = event.key(), event.modifiers()
        plain = not mods & ~Qt.KeyboardModifier.KeypadModifier
        if key == Qt.Key.Key_Tab and plain:
            if self.textCursor().hasSelection():
                self.indent_selection()
            else:  # to the next multiple of four columns
                self.insertPlainText(INDENT[: len(INDENT) - self.textCursor().positionInBlock() % len(INDENT)])
            return
        if key == Qt.Key.Key_Backtab:
            self.dedent_selection()
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and plain:
            self._newline_with_indent()
            return
        if key == Qt.Key.Key_Home and mods in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier):
            self._smart_home(bool(mods & Qt.KeyboardModifier.ShiftModifier))
            return
        super().keyPressEvent(event)

    def event(self, event) -> bool:
        # Tab would otherwise move the focus to the next widget before keyPressEvent sees it
        if event.type() == QEvent.Type.KeyPress and event.key() in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab):
            self.keyPressEvent(event)
            return True
        return super().event(event)

    def _selected_blocks(self) -> list:
        cursor = self.textCursor()
        doc = self.document()
        first = doc.findBlock(cursor.selectionStart())
        last = doc.findBlock(max(cursor.selectionEnd() - (1 if cursor.hasSelection() else 0), cursor.selectionStart()))
        blocks, block = [], first
        while block.isValid():
            blocks.append(block)
            if block == last:
                break
            block = block.next()
        return blocks

    def indent_selection(self) -> None:
        """Four spaces before every line of the selection, as one undo step."""
        cursor = self.textCursor()
        cursor.beginEditBlock()
        for block in self._selected_blocks():
            edit = QTextCursor(block)
            edit.insertText(INDENT)
        cursor.endEditBlock()

    def dedent_selection(self) -> None:
        """Up to four leading spaces off every line of the selection (or the cursor's line)."""
        cursor = self.textCursor()
        cursor.beginEditBlock()
        for block in self._selected_blocks():
            text = block.text()
            count = len(text) - len(text.lstrip(" "))
            count = min(count, len(INDENT)) if count % len(INDENT) == 0 else count % len(INDENT)
            if count:
                edit = QTextCursor(block)
                edit.movePosition(QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.KeepAnchor, count)
                edit.removeSelectedText()
        cursor.endEditBlock()

    def _newline_with_indent(self) -> None:
        cursor = self.textCursor()
        before = cursor.block().text()[: cursor.positionInBlock()]
        indent = before[: len(before) - len(before.lstrip(" \t"))]
        code = before.split("#", 1)[0].rstrip()
        if code.endswith(":"):
            indent += INDENT
        elif code.split() and code.split()[0] in ("return", "pass", "raise", "break", "continue") and indent:
            indent = indent[: -len(INDENT)] if indent.endswith(INDENT) else indent
        cursor.beginEditBlock()
        cursor.insertText("\n" + indent)
        cursor.endEditBlock()
        self.setTextCursor(cursor)
        self.ensureCursorVisible()

    def _smart_home(self, select: bool) -> None:
        cursor = self.textCursor()
        text = cursor.block().text()
        first = len(text) - len(text.lstrip())
        target = 0 if cursor.positionInBlock() == first else first
        mode = QTextCursor.MoveMode.KeepAnchor if select else QTextCursor.MoveMode.MoveAnchor
        cursor.setPosition(cursor.block().position() + target, mode)
        self.setTextCursor(cursor)

    def _on_contents_change(self, *_args) -> None:
        """An edit of the marked line, or one that adds or removes lines (and so moves it), clears
        the marker: it no longer points at what failed."""
        if self.error_line is None:
            return
        block = self.document().findBlockByNumber(self.error_line - 1)
        if self.blockCount() != self._marked[0] or block.text() != self._marked[1]:
            self.mark_error(None)
            self.error_cleared()

    def error_cleared(self) -> None:
        """Called when an edit clears the marker (the panel hides the message)."""

    # --- gutter ----------------------------------------------------------------------------
    def gutter_width(self) -> int:
        digits = max(3, len(str(max(1, self.blockCount()))))
        return 14 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_gutter_width(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _on_update_request(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        r = self.contentsRect()
        self._gutter.setGeometry(QRect(r.left(), r.top(), self.gutter_width(), r.height()))

    def paint_gutter(self, event) -> None:
        painter = QPainter(self._gutter)
        painter.fillRect(event.rect(), GUTTER_BACKGROUND)
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        shown = self._shown_before(block)
        while block.isValid() and top <= event.rect().bottom():
            number = block.blockNumber() + 1
            if block.isVisible():
                shown += 1
                is_error = number == self.error_line
                painter.setPen(ERROR_MARK if is_error else GUTTER_TEXT)
                font = painter.font()
                font.setBold(is_error)
                painter.setFont(font)
                painter.drawText(0, top, self._gutter.width() - 6, height, Qt.AlignmentFlag.AlignRight, self._line_label(shown, is_error))
            top += round(self.blockBoundingRect(block).height())
            block = block.next()

    def _shown_before(self, block) -> int:
        """How many shown lines come before ``block``: in quiz mode the gutter counts only the
        lines on screen, so no gap in the numbers gives a hidden line away."""
        if not self._quiz_active:
            return block.blockNumber()
        count, other = 0, self.document().firstBlock()
        while other.isValid() and other != block:
            count += other.isVisible()
            other = other.next()
        return count

    @staticmethod
    def _line_label(shown: int, is_error: bool) -> str:
        return f"● {shown}" if is_error else str(shown)

    def line_labels(self) -> list[str]:
        """The numbers the gutter writes, top to bottom, one per shown line (as painted)."""
        labels, shown, block = [], 0, self.document().firstBlock()
        while block.isValid():
            if block.isVisible():
                shown += 1
                labels.append(self._line_label(shown, block.blockNumber() + 1 == self.error_line))
            block = block.next()
        return labels

    # --- error line ------------------------------------------------------------------------
    def mark_error(self, line: int | None) -> None:
        """Tint line ``line`` (1-based) and its number; None clears. The text cursor and the scroll
        stay where the user had them: a run that fails while they type elsewhere must not pull
        them away (``go_to_error`` moves there when asked)."""
        self.error_line = line
        if line is not None:
            self._marked = (self.blockCount(), self.document().findBlockByNumber(line - 1).text())
        selections = [s for s in self.extraSelections() if s.format.background().color() != ERROR_BACKGROUND]
        if line is not None and 1 <= line <= self.blockCount():
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(ERROR_BACKGROUND)
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            selection.cursor = QTextCursor(self.document().findBlockByNumber(line - 1))
            selections.append(selection)
        self.setExtraSelections(selections)
        self._gutter.update()

    def go_to_error(self) -> bool:
        """The cursor to the start of the marked line, centred in view; False when none is marked."""
        if self.error_line is None or not 1 <= self.error_line <= self.blockCount():
            return False
        self.setTextCursor(QTextCursor(self.document().findBlockByNumber(self.error_line - 1)))
        self.centerCursor()
        self.setFocus(Qt.FocusReason.OtherFocusReason)
        return True

    # --- quiz: hide the answers ------------------------------------------------------------
    def set_quiz(self, on: bool) -> None:
        """Hide (or show again) the lines and comments that give a buggy twin's answer away."""
        self._quiz = on
        active = on and self.blockCount() <= QUIZ_MAX_LINES
        was, self._quiz_active = self._quiz_active, active
        self.highlighter.set_hidden(active)
        if active or was:
            self._hide_lines(active)

    def follow_quiz(self) -> None:
        """The text changed in quiz mode: hide what it now gives away (nothing once it is too long)."""
        if not self._quiz:
            return
        if self._quiz_active != (self.blockCount() <= QUIZ_MAX_LINES):
            self.set_quiz(True)
        elif self._quiz_active:
            self._hide_lines(True)

    def _hide_lines(self, on: bool) -> None:
        hidden = self.highlighter.hidden_lines() if on else set()
        block = self.document().firstBlock()
        changed = False
        while block.isValid():
            visible = block.blockNumber() not in hidden and not (on and BUG_LINE.match(block.text()))
            if block.isVisible() != visible:
                block.setVisible(visible)
                block.setLineCount(1 if visible else 0)
                changed = True
            block = block.next()
        if changed:
            self.document().markContentsDirty(0, self.document().characterCount())
            self.viewport().update()
            self._gutter.update()
            self._update_gutter_width()

    def quiz_hidden_lines(self) -> list[int]:
        """1-based numbers of the lines hidden now."""
        block, hidden = self.document().firstBlock(), []
        while block.isValid():
            if not block.isVisible():
                hidden.append(block.blockNumber() + 1)
            block = block.next()
        return hidden


class EditorPanel(QWidget):
    """The editor plus the error message under it."""

    text_edited = Signal()

    def __init__(self, parent: QWidget | None = None, *, view: ViewSettings | None = None) -> None:
        super().__init__(parent)
        self.view = view if view is not None else ViewSettings(self)
        self._points = EDITOR_POINTS
        self.form = TextForm()  # how the shown file writes its text (BOM, line ending, stand-ins)
        self._version: CodeVersion | None = None
        self.editor = CodeEditor()
        self.find_bar = FindBar(self.editor)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet(
            "QLabel { background: #fdecea; color: #611a15; padding: 6px; border-radius: 3px; }"
        )
        # marking the line never moves the cursor (the user may be typing elsewhere): this does
        self.go_button = QPushButton("Go to line")
        self.go_button.setToolTip("Put the cursor on the line the run failed at (Ctrl+Shift+E)")
        self.go_button.clicked.connect(self.go_to_error)
        self.error_row = QWidget()
        row = QHBoxLayout(self.error_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.message, 1)
        row.addWidget(self.go_button, 0, Qt.AlignmentFlag.AlignTop)
        self.error_row.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.find_bar)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.error_row)
        self.editor.textChanged.connect(self.text_edited)
        self.editor.error_cleared = self._on_error_line_edited
        self.editor.textChanged.connect(self._on_text_changed)
        self.view.subscribe(self._on_theme_changed)
        self.view.quiz_changed.connect(self._on_quiz_changed)
        self._on_theme_changed()

    def find(self) -> None:
        """Open the find bar (Ctrl+F)."""
        self.find_bar.open()

    def _on_error_line_edited(self) -> None:
        self._hide_message()

    def _hide_message(self) -> None:
        self.message.hide()
        self.error_row.hide()

    def _on_text_changed(self) -> None:
        if self.view.quiz:
            self.editor.follow_quiz()

    def _on_quiz_changed(self, on: bool) -> None:
        self.editor.set_quiz(on)

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        font = QFont(self.editor.font())
        font.setPointSize(theme.pt(self._points))
        self.editor.setFont(font)
        self.editor.setTabStopDistance(4 * self.editor.fontMetrics().horizontalAdvance(" "))
        self.editor._update_gutter_width()
        message = QFont(self.message.font())
        message.setPointSize(theme.pt(10))
        self.message.setFont(message)
        self.go_button.setFont(message)
        self.highlighter_contrast(theme.high_contrast)

    def highlighter_contrast(self, on: bool) -> None:
        self.editor.highlighter.set_high_contrast(on)

    def text(self) -> str:
        """The code as the file holds it, every character and line ending, without a BOM: what
        Run checks (Python reads the saved file as this text)."""
        return from_editor(self.editor.document().toRawText(), self.form)

    def saved_text(self) -> str:
        """What Save writes, as UTF-8: the BOM the file had, then ``text``."""
        return file_text(self.text(), self.form)

    def version(self) -> CodeVersion:
        """The text now, by revision: nothing is copied unless a comparison needs it."""
        document = self.editor.document()
        revision = document.revision()
        if self._version is None or self._version.revision != revision:  # one per revision: read once
            self._version = CodeVersion(document, revision, document.characterCount(), self.text, self.is_blank)
        return self._version

    def is_blank(self) -> bool:
        """Whether the document holds only white space (read a line at a time, up to the first
        that has something)."""
        block = self.editor.document().firstBlock()
        while block.isValid():
            if block.text().strip():
                return False
            block = block.next()
        return True

    def set_text(self, text: str) -> None:
        """Show ``text`` (a file's text, BOM included if it has one) as a new document with a
        fresh undo history: Ctrl+Z never brings back the text of the document shown before
        (under this one's name, for Ctrl+S to write). A document of more than
        MAX_HIGHLIGHT_LINES lines is shown uncoloured."""
        shown, self.form = to_editor(text)
        highlighter, document = self.editor.highlighter, self.editor.document()
        coloured = shown.count("\n") < MAX_HIGHLIGHT_LINES
        if coloured != (highlighter.document() is not None):
            highlighter.setDocument(document if coloured else None)
        self.editor.setPlainText(shown)  # clears the undo and redo stacks
        self.editor.document().clearUndoRedoStacks()
        self.editor.document().setModified(False)
        cursor = self.editor.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.Start)
        self.editor.setTextCursor(cursor)
        self.clear_error()

    def show_error(self, message: str, line: int | None, traceback_text: str = "") -> None:
        where = f"Line {line}: " if line else ""
        text = where + message
        if traceback_text:
            text += "\n" + traceback_text
        self.message.setText(text)
        self.message.show()
        self.go_button.setText(f"Go to line {line}")
        self.go_button.setVisible(bool(line))
        self.error_row.show()
        self.editor.mark_error(line)

    def go_to_error(self) -> None:
        """Run → Go to error line: the cursor to the line the failed run marked."""
        self.editor.go_to_error()

    def clear_error(self) -> None:
        self._hide_message()
        self.editor.mark_error(None)

    def set_font_size(self, points: int) -> None:
        """The editor's size at scale 1 (the theme's scale multiplies it)."""
        self._points = points
        self._on_theme_changed()
