"""The forward-mode Jacobian in the Jacobian panel: a switch "backward (vjp) | forward (jvp)".

A check run with ``check_forward_ad`` carries ``CheckResult.forward_blocks``: for each block, the
Jacobian that forward mode (the Function's ``jvp``, or forward AD) gives, in ``analytic``, beside
the same numerical one, with its own error map and failing cells under gradcheck's rule. The
switch appears only when a result has them. On "forward" the panel draws the forward Jacobian
where the analytic one was and its error map where the backward error was; the numerical map
stays, so the two modes are compared against one reference. Titles, the failing outlines, the
worst cell, the hover readout and the marks of the block list and overview follow the mode; the
banner's hints stay those of the backward comparison (its verdict counts the forward cells).

With check_backward_ad=False a result has forward blocks only: the panel draws them as its
blocks, titled as forward mode, and the switch stays on "forward" with "backward" disabled.

The switch keeps the user's choice from one result to the next while results have forward
blocks. It renders; it computes nothing but the display prep of a forward block on its first visit.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QPushButton, QWidget

from gradviz.app.display import BlockDisplay
from gradviz.app.panels.heatmap_plots import TITLES
from gradviz.schema.report import cell_readout
from gradviz.schema.results import BlockComparison, CheckResult

BACKWARD, FORWARD = "backward", "forward"
FORWARD_TITLES = (
    ("Forward mode (jvp)", "Forward (jvp)", "Forward"),
    TITLES[1],  # the numerical Jacobian is the same in both modes
    ("Error |F − N| (forward)", "Error |F − N|", "|F − N|"),
)
ERROR_CAPTIONS = {BACKWARD: "|A − N|", FORWARD: "|F − N|"}


def forward_blocks(result: CheckResult | None) -> list[BlockComparison]:
    """The result's forward-mode blocks (none unless it was run with check_forward_ad)."""
    return list(result.forward_blocks) if result is not None else []


def forward_counterpart(result: CheckResult | None, block: BlockComparison) -> BlockComparison | None:
    """The forward-mode comparison of ``block``'s (output, input), or None."""
    return next(
        (f for f in forward_blocks(result) if f.output == block.output and f.input == block.input), None
    )


class ForwardSwitch(QWidget):
    """Two exclusive buttons, backward (vjp) | forward (jvp), shown only for a result with
    forward blocks; Tab reaches them, Space or a click switches."""

    mode_changed = Signal(str)  # BACKWARD or FORWARD

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._result: CheckResult | None = None
        self._forward_only = False  # check_backward_ad=False: the result's blocks are forward ones
        self._displays: dict[int, BlockDisplay] = {}  # forward display prep, per index into result.blocks
        self.label = QLabel("Jacobian:")
        self.backward_button = QPushButton("backward (vjp)")
        self.backward_button.setToolTip("The analytic Jacobian from backward (vector-Jacobian products)")
        self.forward_button = QPushButton("forward (jvp)")
        self.forward_button.setToolTip(
            "The Jacobian from forward mode (jvp / forward AD, Jacobian-vector products) against the same numerical one"
        )
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        for button in (self.backward_button, self.forward_button):
            button.setCheckable(True)
            button.setAutoDefault(False)
            self.group.addButton(button)
        self.backward_button.setChecked(True)
        self.setStyleSheet("QPushButton:checked { font-weight: bold; }")  # which mode is on, at a glance
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.label)
        layout.addWidget(self.backward_button)
        layout.addWidget(self.forward_button)
        self.forward_button.toggled.connect(self._on_forward_toggled)
        self.hide()

    # --- the result -----------------------------------------------------------------------------
    def set_result(self, result: CheckResult | None) -> CheckResult | None:
        """A new result: the switch shows only when it has forward blocks; the chosen mode stays.
        Returns what the panel draws: ``result``, or for forward mode alone (no backward blocks)
        a copy whose blocks are the forward ones."""
        self._displays.clear()
        forward = forward_blocks(result)
        self._forward_only = result is not None and bool(forward) and not result.blocks
        if result is not None and self._forward_only:
            result = replace(result, blocks=forward, forward_blocks=[])
        self._result = result
        self.backward_button.setEnabled(not self._forward_only)
        self.backward_button.setToolTip(
            "check_backward_ad is off: this run has no backward Jacobian"
            if self._forward_only
            else "The analytic Jacobian from backward (vector-Jacobian products)"
        )
        with QSignalBlocker(self.forward_button), QSignalBlocker(self.backward_button):
            if self._forward_only:
                self.forward_button.setChecked(True)
        self.setVisible(bool(forward))
        return result

    def mode(self) -> str:
        """What the maps show: FORWARD while the switch says so and the result has forward blocks,
        or when it has nothing else."""
        if self._forward_only:
            return FORWARD
        return FORWARD if self.forward_button.isChecked() and forward_blocks(self._result) else BACKWARD

    def set_mode(self, mode: str) -> None:
        (self.forward_button if mode == FORWARD else self.backward_button).setChecked(True)

    # --- what the panel draws -------------------------------------------------------------------
    def shown(self, block: BlockComparison) -> BlockComparison:
        """The comparison the maps show for ``block``: its forward one in forward mode (when the
        result has it), else ``block`` itself."""
        if self.mode() == FORWARD and not self._forward_only:
            return forward_counterpart(self._result, block) or block
        return block  # backward mode, or forward mode alone (its blocks are the forward ones)

    def listed(self, result: CheckResult | None) -> CheckResult | None:
        """``result`` with each block replaced by the comparison on screen, for the block list and
        the overview (their marks and thumbnails follow the mode)."""
        if result is None or self.mode() != FORWARD or self._forward_only:
            return result
        return replace(result, blocks=[self.shown(block) for block in result.blocks])

    def display(self, index: int, block: BlockComparison, atol: float) -> BlockDisplay | None:
        """Display prep of the forward comparison of ``block`` (index ``index`` of result.blocks),
        made on its first visit; None in backward mode."""
        shown = self.shown(block)
        if shown is block:
            return None
        if index not in self._displays:
            self._displays[index] = BlockDisplay(shown, atol)
        return self._displays[index]

    def titles(self) -> tuple[tuple[str, ...], ...]:
        """The three maps' titles (each from its longest wording to its shortest)."""
        return FORWARD_TITLES if self.mode() == FORWARD else TITLES

    def error_caption(self, log: bool) -> str:
        caption = ERROR_CAPTIONS[self.mode()]
        return f"log10 {caption}" if log else caption

    def readout(self, result: CheckResult, block: BlockComparison, row: int, col: int, offset=(0, 0)) -> str:
        """The hover line; in forward mode the value compared is the forward one, and says so."""
        text = cell_readout(result, block, row, col, offset=offset)
        if self.mode() == FORWARD and block is not None:
            label = f"{result.cell_label(block, row, col)}: "
            text = text.replace(f"{label}analytic ", f"{label}forward (jvp) ", 1)
        return text

    # --- events ---------------------------------------------------------------------------------
    def _on_forward_toggled(self, _checked: bool) -> None:
        self.mode_changed.emit(self.mode())
