"""The verdict banner: pass/fail, failing count, worst cell, the shown block's hints, warnings and
notes; while a run is in flight, "Running… 3.2 s"; and when the results on screen no longer match
the editor, a line that says so.

The hint is the answer the user came for, so it is always shown whole under the headline, at every
size and in presentation; only quiz mode, which hides the answers, hides it. The other details (checks, warnings, notes) are folded by default into
the headline's line, elided, beside a disclosure button that shows them all below it: at 1280x720
every line the banner takes is a line the heatmaps lose. The choice is kept for the next results
(and, through ``expanded_changed``, by whoever saves it)."""

from __future__ import annotations

import time
from html import escape
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from gradviz.app.theme import ViewSettings
from gradviz.schema.report import verdict_line
from gradviz.schema.results import PASSED, WARNED, BlockComparison, CheckResult

if TYPE_CHECKING:
    from gradviz.app.state import CurrentResult, ShownRun


class BlockOnScreen(Protocol):
    """What the banner reads of the Jacobian panel: the block shown, whose hints it lists."""

    block_changed: Any  # Signal

    def current_block(self) -> BlockComparison | None: ...

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
QUIZ_HIDES_HINT = "<b>Hint</b>: hidden while quiz is on (Ctrl+Shift+Q shows it)"
MIN_FOLDED = 60  # px: narrower, the folded details show only as the disclosure's "3 more"


def plain(html: str) -> str:
    """The text of an HTML fragment, as the label shows it."""
    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText()


class ElidedLabel(QLabel):
    """One line of plain text elided to the label's width (its full text in ``full_text``); it
    asks for no width of its own, so it never widens the banner."""

    def __init__(self) -> None:
        super().__init__()
        self.full_text = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def set_full_text(self, text: str) -> None:
        self.full_text = text
        self._elide()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        self.setText(self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, max(self.width(), 0)))


class VerdictBanner(QWidget):
    expanded_changed = Signal(bool)  # the details were shown in full (True) or folded to one line

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        view: ViewSettings | None = None,
        current: CurrentResult | None = None,
        shown: ShownRun | None = None,
        blocks: BlockOnScreen | None = None,
    ) -> None:
        """``current``: the check on screen, whose verdict is shown whenever it changes, with the
        hints of the block ``blocks`` shows; ``shown``: whose stale reason greys the verdict."""
        super().__init__(parent)
        self.view = view if view is not None else ViewSettings(self)
        self.current, self.blocks = current, blocks
        self.headline = QLabel()
        self.hint = QLabel()  # the shown block's hints, never folded
        self.details = QLabel()
        for label in (self.hint, self.details):
            label.setTextFormat(Qt.TextFormat.RichText)  # a lone line with an entity is still HTML
        # folded: the details on one line, elided to the banner's width (never widening it)
        self.folded = ElidedLabel()
        for label in (self.headline, self.hint, self.details):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.disclosure = QToolButton()
        self.disclosure.setCheckable(True)
        self.disclosure.setAutoRaise(True)
        self.disclosure.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.disclosure.toggled.connect(self._on_disclosure_toggled)
        # folded, the details share the headline's line: at 1280x720 every line the banner takes
        # is a line the heatmaps lose
        self.top_row = QHBoxLayout()
        self.top_row.setContentsMargins(0, 0, 0, 0)
        self.top_row.setSpacing(4)
        self.top_row.addWidget(self.headline, 0)
        self.top_row.addWidget(self.disclosure, 0)
        self.top_row.addWidget(self.folded, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(self.top_row)
        layout.addWidget(self.hint)
        layout.addWidget(self.details)
        self._expanded = False
        self._details_html = ""
        self._state = "idle"
        self._text = ""
        self._details = ""
        self._hint = ""
        self._stale = ""
        self._running_since = 0.0
        self._running_what = ""
        self._compact = False  # presentation mode: the details only as the headline's tooltip
        self._clock = QTimer(self, interval=TICK_MS)
        self._clock.timeout.connect(self._tick)
        self.view.subscribe(self._on_theme_changed)
        self.view.quiz_changed.connect(self._on_quiz_changed)
        self._on_theme_changed()
        self.show_message("Pick a Function and press Run (Ctrl+Enter).", "idle")
        if current is not None:
            current.changed.connect(self._on_result_changed)
            if blocks is not None:
                blocks.block_changed.connect(self._on_block_changed)
        if shown is not None:
            shown.stale_changed.connect(self.set_stale)

    def _on_result_changed(self) -> None:
        self.show_result(self.current.result, self._block_shown())

    def _on_block_changed(self, *_args: Any) -> None:
        """Another block on screen: its hints, under the verdict of the result on screen."""
        if self.current.result is not None and self._state in ("passed", "failed"):
            self.show_result(self.current.result, self._block_shown())

    def _block_shown(self) -> BlockComparison | None:
        """The block on screen if it is one of the result's (the panel may not have drawn it yet)."""
        block = self.blocks.current_block() if self.blocks is not None else None
        result = self.current.result if self.current is not None else None
        return block if result is not None and any(block is b for b in result.blocks) else None

    @property
    def state(self) -> str:
        return self._state

    def show_message(self, text: str, state: str, details: str = "", hint: str = "") -> None:
        """``details`` are folded with the disclosure; ``hint`` (HTML lines) is always shown."""
        self._clock.stop()
        self._state, self._text, self._details, self._hint = state, text, details, hint
        self._render()

    def show_running(self, what: str, note: str = "") -> None:
        """'Running <what>… 3.2 s', counting, until the next message or result."""
        if not self._clock.isActive():
            self._running_since = time.monotonic()
            self._clock.start()
        self._state, self._running_what, self._details, self._hint = "running", what, note, ""
        self._tick()

    def running_seconds(self) -> float | None:
        return time.monotonic() - self._running_since if self._clock.isActive() else None

    def show_result(self, result: CheckResult, block: BlockComparison | None = None) -> None:
        lines = [f"⚠ {escape(w, quote=False)}" for w in result.warnings]
        # failed checks with their detail, the others on one line
        lines += [f"✗ <b>{escape(c.name)}</b>: {escape(c.detail, quote=False)}" for c in result.checks if c.failed]
        # a check beyond gradcheck that found a problem (vmap_rule): its detail, outside the verdict
        lines += [f"⚠ <b>{escape(c.name)}</b>: {escape(c.detail, quote=False)}" for c in result.checks if c.status == WARNED]
        quiet = [c for c in result.checks if not c.failed and c.status != WARNED]
        if quiet:
            lines.append(
                " · ".join(f"{'✓' if c.status == PASSED else '–'} {escape(c.name)}" for c in quiet)
                + ("" if all(c.status == PASSED for c in quiet) else "  (– declared unsupported)")
            )
        hints = []
        if block is not None:
            hints = [f"<b>Hint</b> ({escape(result.block_title(block))}): {escape(h, quote=False)}" for h in block.hints]
        lines += [f"ℹ {escape(note, quote=False)}" for note in result.notes]
        seconds = result.seconds.get("total")
        suffix = f"  ·  {result.device}, {result.dtype}" + (f", {seconds:.2f} s" if seconds is not None else "")
        self.show_message(
            verdict_line(result) + suffix, "passed" if result.passed else "failed", "<br>".join(lines), "<br>".join(hints)
        )

    def set_stale(self, text: str | None) -> None:
        """Grey the verdict and say why it no longer matches the editor; None: it does again."""
        if (text or "") != self._stale:
            self._stale = text or ""
            self._render()

    def stale_text(self) -> str:
        return self._stale

    def plain_text(self) -> str:
        """Headline, hint and details as plain text (a figure's caption), all of them even when folded."""
        parts = (self.headline.text(), plain(self._hint), plain(self._details_html))
        return "\n".join(part for part in parts if part)

    def set_expanded(self, expanded: bool) -> None:
        """The details in full (True) or on one line."""
        self.disclosure.setChecked(expanded)

    def is_expanded(self) -> bool:
        return self._expanded

    def _on_disclosure_toggled(self, expanded: bool) -> None:
        if expanded != self._expanded:
            self._expanded = expanded
            self._render()
            self.expanded_changed.emit(expanded)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._details_html and not self._expanded and not self._compact:
            self._fold()

    def _fold(self) -> None:
        """The details on one line beside the headline, which keeps its one line where it can."""
        text = " · ".join(line for line in plain(self._details_html).splitlines() if line.strip())
        self.folded.set_full_text(text)
        # its one line's width, with padding, border and some air
        headline = self.headline.fontMetrics().horizontalAdvance(self._text) + round(16 * self.view.theme.scale) + 20
        room = self.width() - headline - self.disclosure.sizeHint().width() - 8
        beside = room >= MIN_FOLDED  # else the headline takes the line, the disclosure says "3 more"
        self.folded.setVisible(beside)
        self.headline.setMinimumWidth(headline if beside else 0)
        self.top_row.setStretchFactor(self.headline, 0 if beside else 1)

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
        pad = f"{round(3 * theme.scale)}px {round(6 * theme.scale)}px"
        sheet = f"QLabel {{ {style} padding:{pad}; border-radius:4px; }}"
        if sheet != self.headline.styleSheet():  # a new sheet re-polishes the label: not 10 times a second
            self.headline.setStyleSheet(sheet)
        details = self._details
        if self._stale:
            note = f"<b>⟲ {escape(self._stale, quote=False)}</b>"
            details = f"{note}<br>{details}" if details else note
        self._details_html = details
        lines = details.count("<br>") + 1 if details else 0
        folded = bool(details) and not self._expanded and not self._compact
        self.disclosure.setVisible(bool(details) and not self._compact)
        self.disclosure.setText("less" if self._expanded else f"{lines} more" if lines > 1 else "more")
        self.disclosure.setArrowType(Qt.ArrowType.DownArrow if self._expanded else Qt.ArrowType.RightArrow)
        self.hint.setText(QUIZ_HIDES_HINT if self._hint and self.view.quiz else self._hint)
        self.hint.setVisible(bool(self._hint))
        self.details.setText(details)
        self.details.setVisible(bool(details) and self._expanded and not self._compact)
        self.folded.setToolTip(plain(details) if folded else "")
        self.disclosure.setToolTip(plain(details) if folded else "Fold the details into one line")
        if folded:
            self._fold()
        else:
            self.folded.hide()
            self.headline.setMinimumWidth(0)
            self.top_row.setStretchFactor(self.headline, 1)
        self.headline.setToolTip(details if self._compact else "")

    def set_compact(self, compact: bool) -> None:
        """The headline and the hint only (a lecture's 720 lines leave no room for the checks); the
        details stay in the headline's tooltip."""
        self._compact = compact
        self._render()

    def _on_quiz_changed(self, _on: bool) -> None:
        self._render()

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.headline.setFont(theme.font(12, bold=True))
        self.details.setFont(theme.font(10))
        self.details.setStyleSheet(f"color: {theme.ink}")
        self.hint.setFont(theme.font(11))
        self.hint.setStyleSheet(f"color: {theme.ink}")
        self.folded.setFont(theme.font(10))
        self.folded.setStyleSheet(f"color: {theme.ink}")
        self._render()
