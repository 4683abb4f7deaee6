"""The verdict banner: pass/fail, failing count, worst cell, warnings, notes and hints."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gradviz.schema.report import verdict_line
from gradviz.schema.results import PASSED, BlockComparison, CheckResult

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

    def show_result(self, result: CheckResult, block: BlockComparison | None = None) -> None:
        lines = [f"⚠ {escape(w)}" for w in result.warnings]
        # failed checks with their detail, the others on one line
        lines += [f"✗ <b>{escape(c.name)}</b>: {escape(c.detail)}" for c in result.checks if c.failed]
        quiet = [c for c in result.checks if not c.failed]
        if quiet:
            lines.append(
                " · ".join(f"{'✓' if c.status == PASSED else '–'} {escape(c.name)}" for c in quiet)
                + ("" if all(c.status == PASSED for c in quiet) else "  (– declared unsupported)")
            )
        if block is not None:
            lines += [f"<b>Hint</b> ({escape(result.block_title(block))}): {escape(h)}" for h in block.hints]
        lines += [f"ℹ {escape(note)}" for note in result.notes]
        seconds = result.seconds.get("total")
        suffix = f"  ·  {result.device}, {result.dtype}" + (f", {seconds:.2f} s" if seconds is not None else "")
        self.show_message(
            verdict_line(result) + suffix, "passed" if result.passed else "failed", "<br>".join(lines)
        )
