"""Ctrl+F in the editor: a field to type in; Enter finds the next match, Shift+Enter the previous,
Esc closes. The field's hint is the longest wording that fits its width (a narrow dock at
1280x720 cut "Find (Enter: ne…"); the full wording is its tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QStyleOptionFrame,
    QToolButton,
    QWidget,
)

PLACEHOLDERS = (  # the find field's hint, longest first: the widest that fits is shown
    "Find (Enter: next, Shift+Enter: previous, Esc: close)",
    "Find (Enter: next, Esc: close)",
    "Find (Enter: next)",
    "Find",
)
PLACEHOLDER_MARGIN = 2  # px QLineEdit leaves on each side of its text

class _FindField(QLineEdit):
    """The find field: tells the bar when its size or font changes (to refit its hint)."""

    def __init__(self, refit) -> None:
        super().__init__()
        self._refit = refit

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._refit()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._refit()


class FindBar(QWidget):
    """Ctrl+F: a line to type in; Enter finds the next match, Shift+Enter the previous, Esc closes."""

    def __init__(self, editor: QPlainTextEdit, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editor = editor
        self.field = _FindField(self._fit_placeholder)
        self.field.setClearButtonEnabled(True)
        self.field.setToolTip(PLACEHOLDERS[0])
        self.field.installEventFilter(self)  # Esc and Shift+Enter
        self.status = QLabel("")
        self.next_button = QPushButton("↓")  # arrows, not words: the field keeps the room in a narrow dock
        self.prev_button = QPushButton("↑")
        self.next_button.setToolTip("Next match (Enter)")
        self.prev_button.setToolTip("Previous match (Shift+Enter)")
        close = QPushButton("✕")
        close.setFlat(True)
        close.setToolTip("Close (Esc)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.field, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.prev_button)
        layout.addWidget(self.next_button)
        layout.addWidget(close)
        self.field.textChanged.connect(lambda _text: self.find(from_start=True))
        self.field.returnPressed.connect(self.find)
        self.next_button.clicked.connect(self.find)
        self.prev_button.clicked.connect(lambda: self.find(backward=True))
        close.clicked.connect(self.close_bar)
        self._fit_placeholder()
        self.hide()

    def open(self) -> None:
        selected = self.editor.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.field.setText(selected)
        self.show()
        self.field.setFocus()
        self.field.selectAll()

    def close_bar(self) -> None:
        self.hide()
        self.editor.setFocus()

    def find(self, *, backward: bool = False, from_start: bool = False) -> bool:
        """Select the next (or previous) match, wrapping around; False when there is none."""
        text = self.field.text()
        if not text:
            self.status.setText("")
            return False
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        start = self.editor.textCursor()
        if from_start:
            start.setPosition(start.selectionStart())
        found = self.editor.document().find(text, start, flags)
        if found.isNull():  # wrap around
            wrap = QTextCursor(self.editor.document())
            if backward:
                wrap.movePosition(QTextCursor.MoveOperation.End)
            found = self.editor.document().find(text, wrap, flags)
        if found.isNull():
            self.status.setText("not found")
            return False
        self.status.setText("")
        self.editor.setTextCursor(found)
        self.editor.ensureCursorVisible()
        return True

    def text_room(self) -> int:
        """Pixels the field has for its text: its contents less its margins and the clear button."""
        field = self.field
        option = QStyleOptionFrame()
        field.initStyleOption(option)
        rect = field.style().subElementRect(QStyle.SubElement.SE_LineEditContents, option, field)
        margins = field.textMargins()
        right = rect.right() - margins.right()
        for button in field.findChildren(QToolButton):  # the clear button sits inside the field
            right = min(right, button.geometry().left())
        return right - rect.left() - margins.left() - 2 * PLACEHOLDER_MARGIN

    def _fit_placeholder(self) -> None:
        """The longest wording of the placeholder that fits the field (the full one is its tooltip);
        the field never narrower than the shortest ("Find") beside its clear button."""
        field = self.field
        room, metrics = self.text_room(), field.fontMetrics()
        text = next((t for t in PLACEHOLDERS if metrics.horizontalAdvance(t) <= room), PLACEHOLDERS[-1])
        if text != field.placeholderText():
            field.setPlaceholderText(text)
        least = metrics.horizontalAdvance(PLACEHOLDERS[-1]) + field.width() - room
        if field.minimumWidth() < least:
            field.setMinimumWidth(least)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and event.key() == Qt.Key.Key_Escape:
            event.accept()  # Esc closes the bar here; elsewhere it cancels the run
            return True
        if event.type() == QEvent.Type.KeyPress:
            if event.key() == Qt.Key.Key_Escape:
                self.close_bar()
                return True
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.find(backward=True)
                return True
        return super().eventFilter(watched, event)
