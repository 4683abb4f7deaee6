"""What the user's code printed during the last run, kept short.

A Function that prints megabytes must not freeze the window: text arrives in chunks, only the
newest ``KEEP`` characters of each burst reach the widget, at most every ``FLUSH_MS``, the widget
holds at most ``MAX_SHOWN`` characters however many bursts come (a slower machine flushes more
often), and a line says how much was left out.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFontDatabase, QTextCursor
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

KEEP = 64 * 1024  # characters shown per burst
MAX_SHOWN = 2 * KEEP  # characters the widget holds at most
MAX_LINES = 5000
FLUSH_MS = 100


class OutputPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LINES)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlaceholderText("What your code prints (print, warnings) shows here.")
        self.status = QLabel("")
        self.status.setStyleSheet("color: #555")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.status)
        self._pending = ""
        self._dropped = 0
        self.received = 0  # characters this run, shown or not
        self._timer = QTimer(self, singleShot=True, interval=FLUSH_MS)
        self._timer.timeout.connect(self._flush)

    def clear(self) -> None:
        self._timer.stop()
        self._pending, self._dropped, self.received = "", 0, 0
        self.text.clear()
        self.status.setText("")

    def append(self, chunk: str) -> None:
        self.received += len(chunk)
        self._pending += chunk
        if len(self._pending) > KEEP:
            self._dropped += len(self._pending) - KEEP
            self._pending = self._pending[-KEEP:]
        if not self._timer.isActive():
            self._timer.start()

    def shown_text(self) -> str:
        return self.text.toPlainText()

    def _flush(self) -> None:
        if self._dropped:
            self.text.appendPlainText(f"[… {self._dropped:,} characters not shown …]")
            self._dropped = 0
        if self._pending:
            self.text.appendPlainText(self._pending.rstrip("\n"))
            self._pending = ""
        self._trim()
        self.status.setText(f"{self.received:,} characters printed" if self.received else "")

    def _trim(self) -> None:
        """Drop the oldest lines past ``MAX_SHOWN`` characters, leaving a line that says so."""
        document = self.text.document()
        excess = document.characterCount() - MAX_SHOWN
        if excess <= 0:
            return
        cursor = QTextCursor(document)
        cursor.setPosition(excess, QTextCursor.MoveMode.KeepAnchor)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        hidden = self.received - document.characterCount()
        cursor.insertText(f"[… {hidden:,} characters not shown …]")
