"""The code editor: Pygments highlighting, line numbers, the failing line marked with its message."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QPainter, QTextCursor, QTextFormat
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTextEdit, QVBoxLayout, QWidget

from gradviz.app.highlighter import PythonHighlighter

ERROR_BACKGROUND = QColor("#ffd7d7")
GUTTER_BACKGROUND = QColor("#f3f3f3")
GUTTER_TEXT = QColor("#999999")
ERROR_MARK = QColor("#d0312d")


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
        font.setPointSize(11)
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self.error_line: int | None = None
        self._gutter = LineNumberArea(self)
        self.highlighter = PythonHighlighter(self.document())
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._on_update_request)
        self._update_gutter_width()

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
        while block.isValid() and top <= event.rect().bottom():
            number = block.blockNumber() + 1
            if block.isVisible():
                is_error = number == self.error_line
                painter.setPen(ERROR_MARK if is_error else GUTTER_TEXT)
                font = painter.font()
                font.setBold(is_error)
                painter.setFont(font)
                label = f"● {number}" if is_error else str(number)
                painter.drawText(0, top, self._gutter.width() - 6, height, Qt.AlignmentFlag.AlignRight, label)
            top += round(self.blockBoundingRect(block).height())
            block = block.next()

    # --- error line ------------------------------------------------------------------------
    def mark_error(self, line: int | None) -> None:
        """Tint line ``line`` (1-based) and scroll to it; None clears."""
        self.error_line = line
        selections = []
        if line is not None and 1 <= line <= self.blockCount():
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(ERROR_BACKGROUND)
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            selection.cursor = QTextCursor(self.document().findBlockByNumber(line - 1))
            selections.append(selection)
            self.setTextCursor(selection.cursor)
            self.centerCursor()
        self.setExtraSelections(selections)
        self._gutter.update()


class EditorPanel(QWidget):
    """The editor plus the error message under it."""

    text_edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editor = CodeEditor()
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet(
            "QLabel { background: #fdecea; color: #611a15; padding: 6px; border-radius: 3px; }"
        )
        font = self.message.font()
        font.setPointSize(font.pointSize() + 1)
        self.message.setFont(font)
        self.message.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.message)
        self.editor.textChanged.connect(self.text_edited)

    def text(self) -> str:
        return self.editor.toPlainText()

    def set_text(self, text: str) -> None:
        """Show ``text`` as a new document with a fresh undo history: Ctrl+Z never brings back
        the text of the document shown before (under this one's name, for Ctrl+S to write)."""
        self.editor.setPlainText(text)  # clears the undo and redo stacks
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
        self.editor.mark_error(line)

    def clear_error(self) -> None:
        self.message.hide()
        self.editor.mark_error(None)

    def set_font_size(self, points: int) -> None:
        font = QFont(self.editor.font())
        font.setPointSize(points)
        self.editor.setFont(font)
