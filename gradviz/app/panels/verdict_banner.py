"""The verdict banner: pass/fail, failing count, worst cell, warnings, notes and hints."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gradviz.app.results import BlockView, CheckView

STYLES = {
    "passed": "background:#e6f4ea; color:#0d5223; border:1px solid #9ad0a8;",
    "failed": "background:#fdecea; color:#7a1410; border:1px solid #f0a9a4;",
    "error": "background:#fff4e5; color:#663c00; border:1px solid #f5c27a;",
    "idle": "background:#f3f3f3; color:#444; border:1px solid #ddd;",
}


class VerdictBanner(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.headline = QLabel()
        self.details = QLabel()
        for label in (self.headline, self.details):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.headline.font()
        font.setPointSize(font.pointSize() + 4)
        font.setBold(True)
        self.headline.setFont(font)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.headline)
        layout.addWidget(self.details)
        self.show_message("Pick a Function and press Run (Ctrl+Enter).", "idle")

    @property
    def state(self) -> str:
        return self._state

    def show_message(self, text: str, state: str, details: str = "") -> None:
        self._state = state
        self.headline.setText(text)
        self.headline.setStyleSheet(f"QLabel {{ {STYLES[state]} padding:8px; border-radius:4px; }}")
        self.details.setText(details)
        self.details.setVisible(bool(details))

    def show_result(self, view: CheckView, block: BlockView | None = None) -> None:
        lines = []
        for w in view.warnings:
            lines.append(f"⚠ {escape(w)}")
        for c in view.checks:  # failed checks with their detail, the others on one line
            if c["status"] == "failed":
                lines.append(f"✗ <b>{escape(c['name'])}</b>: {escape(c['detail'])}")
        quiet = [c for c in view.checks if c["status"] != "failed"]
        if quiet:
            marks = {"passed": "✓"}
            lines.append(
                " · ".join(f"{marks.get(c['status'], '–')} {escape(c['name'])}" for c in quiet)
                + ("" if all(c["status"] == "passed" for c in quiet) else "  (– declared unsupported)")
            )
        if block is not None:
            for h in block.hints:
                lines.append(f"<b>Hint</b> ({escape(view.block_title(block))}): {escape(h)}")
        for note in view.notes:
            lines.append(f"ℹ {escape(note)}")
        seconds = view.seconds.get("total")
        suffix = f"  ·  {view.device}, {view.dtype}" + (f", {seconds:.2f} s" if seconds is not None else "")
        self.show_message(
            view.verdict_text() + suffix, "passed" if view.passed else "failed", "<br>".join(lines)
        )
