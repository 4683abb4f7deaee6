"""The verdict banner: pass/fail, failing count, worst cell, warnings, notes and hints; while a run
is in flight, "Running… 3.2 s"; and when the results on screen no longer match the editor, a line
that says so."""

from __future__ import annotations

import time
from html import escape

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gradviz.app.theme import ViewSettings
from gradviz.schema.report import verdict_line
from gradviz.schema.results import PASSED, BlockComparison, CheckResult

STYLES = {
    "passed": "background:#e6f4ea; color:#0d5223; border:1px solid #9ad0a8;",
    "failed": "background:#fdecea; color:#7a1410; border:1px solid #f0a9a4;",
    "error": "background:#fff4e5; color:#663c00; border:1px solid #f5c27a;",
    "idle": "background:#f3f3f3; color:#444; border:1px solid #ddd;",
    "running": "background:#e8f0fe; color:#174ea6; border:1px solid #a8c7fa;",
}
HIGH_CONTRAST = {  # solid colours, white text: readable from the back of a room
    "passed": "background:#0b6b2b; color:white; border:2px solid black;",
    "failed": "background:#b00020; color:white; border:2px solid black;",
    "error": "background:#8a4b00; color:white; border:2px solid black;",
    "idle": "background:white; color:black; border:2px solid black;",
    "running": "background:#0b3d91; color:white; border:2px solid black;",
}
STALE = "background:#f3f3f3; color:#555; border:1px dashed #999;"
TICK_MS = 100


class VerdictBanner(QWidget):
    def __init__(self, parent: QWidget | None = None, *, view: ViewSettings | None = None) -> None:
        super().__init__(parent)
        self.view = view if view is not None else ViewSettings(self)
        self.headline = QLabel()
        self.details = QLabel()
        self.details.setTextFormat(Qt.TextFormat.RichText)  # a lone line with an entity is still HTML
        for label in (self.headline, self.details):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.headline)
        layout.addWidget(self.details)
        self._state = "idle"
        self._text = ""
        self._details = ""
        self._stale = ""
        self._running_since = 0.0
        self._running_what = ""
        self._compact = False  # presentation mode: the details only as the headline's tooltip
        self._clock = QTimer(self, interval=TICK_MS)
        self._clock.timeout.connect(self._tick)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()
        self.show_message("Pick a Function and press Run (Ctrl+Enter).", "idle")

    @property
    def state(self) -> str:
        return self._state

    def show_message(self, text: str, state: str, details: str = "") -> None:
        self._clock.stop()
        self._state, self._text, self._details = state, text, details
        self._render()

    def show_running(self, what: str, note: str = "") -> None:
        """'Running <what>… 3.2 s', counting, until the next message or result."""
        if not self._clock.isActive():
            self._running_since = time.monotonic()
            self._clock.start()
        self._state, self._running_what, self._details = "running", what, note
        self._tick()

    def running_seconds(self) -> float | None:
        return time.monotonic() - self._running_since if self._clock.isActive() else None

    def show_result(self, result: CheckResult, block: BlockComparison | None = None) -> None:
        lines = [f"⚠ {escape(w, quote=False)}" for w in result.warnings]
        # failed checks with their detail, the others on one line
        lines += [f"✗ <b>{escape(c.name)}</b>: {escape(c.detail, quote=False)}" for c in result.checks if c.failed]
        quiet = [c for c in result.checks if not c.failed]
        if quiet:
            lines.append(
                " · ".join(f"{'✓' if c.status == PASSED else '–'} {escape(c.name)}" for c in quiet)
                + ("" if all(c.status == PASSED for c in quiet) else "  (– declared unsupported)")
            )
        if block is not None:
            lines += [
                f"<b>Hint</b> ({escape(result.block_title(block))}): {escape(h, quote=False)}" for h in block.hints
            ]
        lines += [f"ℹ {escape(note, quote=False)}" for note in result.notes]
        seconds = result.seconds.get("total")
        suffix = f"  ·  {result.device}, {result.dtype}" + (f", {seconds:.2f} s" if seconds is not None else "")
        self.show_message(
            verdict_line(result) + suffix, "passed" if result.passed else "failed", "<br>".join(lines)
        )

    def set_stale(self, text: str | None) -> None:
        """Grey the verdict and say why it no longer matches the editor; None: it does again."""
        if (text or "") != self._stale:
            self._stale = text or ""
            self._render()

    def stale_text(self) -> str:
        return self._stale

    def plain_text(self) -> str:
        """Headline and details as plain text (a figure's caption)."""
        from PySide6.QtGui import QTextDocument

        doc = QTextDocument()
        doc.setHtml(self.details.text())
        return "\n".join(part for part in (self.headline.text(), doc.toPlainText()) if part)

    # internals --------------------------------------------------------------------------------

    def _tick(self) -> None:
        seconds = time.monotonic() - self._running_since
        self._text = f"Running {self._running_what}… {seconds:.1f} s".replace("Running … ", "Running… ")
        self._render()

    def _render(self) -> None:
        theme = self.view.theme
        stale = bool(self._stale) and self._state in ("passed", "failed")
        style = STALE if stale else (HIGH_CONTRAST if theme.high_contrast else STYLES)[self._state]
        self.headline.setText(self._text)
        self.headline.setStyleSheet(f"QLabel {{ {style} padding:{round(6 * theme.scale)}px; border-radius:4px; }}")
        details = self._details
        if self._stale:
            note = f"<b>⟲ {escape(self._stale, quote=False)}</b>"
            details = f"{note}<br>{details}" if details else note
        self.details.setText(details)
        self.details.setVisible(bool(details) and not self._compact)
        self.headline.setToolTip(details if self._compact else "")

    def set_compact(self, compact: bool) -> None:
        """Only the headline (a lecture's 720 lines leave no room for the checks and the hint, and
        the hint gives the answer away); the details stay in the headline's tooltip."""
        self._compact = compact
        self._render()

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.headline.setFont(theme.font(13, bold=True))
        self.details.setFont(theme.font(10))
        self.details.setStyleSheet(f"color: {theme.ink}")
        self._render()
