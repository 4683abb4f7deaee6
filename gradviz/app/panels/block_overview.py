"""The whole Jacobian at a glance: its block matrix (a row per output, a column per input), each
block a thumbnail with its failing count; clicking one shows it in the heatmaps.

A Function with several inputs and outputs has one block per (output, input) pair, and a
drop-down shows them one at a time; this grid shows where the failures are before any is
opened. A thumbnail is the block's |analytic| in grey with its failing cells in red (pooled with
the largest value of each tile, so a single failing cell still shows); a block too large to hold
has no matrix to draw, only the cells its search found.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFont, QIcon, QImage, QPixmap
from PySide6.QtWidgets import QButtonGroup, QGridLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from gradviz.render.pooling import pool_max, pool_max_abs
from gradviz.schema.results import BlockComparison, CheckResult, LargeBlock

THUMB = 44  # px of a thumbnail's longer side
FAIL_RGB = (230, 20, 60)
FAIL_INK = "#b00020"  # a failing count on a white thumbnail: 7.3:1
FAIL_INK_ON_BLACK = "#ff8a80"  # on the high-contrast theme's black (checked) thumbnail: 9.2:1, #b00020 was 2.9:1
SEARCHED_RGB = (200, 200, 200)  # a block too large to hold: no matrix to draw


def thumbnail(block: BlockComparison | LargeBlock, side: int = THUMB) -> np.ndarray:
    """An RGB image of ``block`` at most ``side`` px a side, with the block's aspect: |analytic|
    from white (0) to dark grey (its largest), failing cells red."""
    rows, cols = block.shape
    scale = side / max(rows, cols, 1)
    shape = (max(1, round(rows * scale)), max(1, round(cols * scale)))
    if isinstance(block, LargeBlock):
        image = np.empty((*shape, 3), dtype=np.uint8)
        image[:] = SEARCHED_RGB
        for cell in block.cells:
            image[min(int(cell.row * scale), shape[0] - 1), min(int(cell.col * scale), shape[1] - 1)] = FAIL_RGB
        return image
    factor = max(1, -(-max(rows, cols) // side))
    values = np.abs(pool_max_abs(np.nan_to_num(block.analytic, nan=0.0, posinf=0.0, neginf=0.0), factor))
    failing = pool_max(block.failing.astype(np.float32), factor) > 0
    top = float(values.max()) or 1.0
    grey = (255 - 190 * np.clip(values / top, 0, 1)).astype(np.uint8)
    image = np.repeat(grey[..., None], 3, axis=2)
    image[failing] = FAIL_RGB
    # each pooled pixel repeated to the thumbnail's size (nearest neighbour: cells stay sharp)
    r = np.minimum((np.arange(shape[0]) * grey.shape[0]) // shape[0], grey.shape[0] - 1)
    c = np.minimum((np.arange(shape[1]) * grey.shape[1]) // shape[1], grey.shape[1] - 1)
    return np.ascontiguousarray(image[r][:, c])


def _pixmap(rgb: np.ndarray) -> QPixmap:
    height, width, _ = rgb.shape
    image = QImage(rgb.data, width, height, 3 * width, QImage.Format.Format_RGB888)
    return QPixmap.fromImage(image.copy())  # copy: the array dies with this call


def failing_text(block: BlockComparison | LargeBlock) -> str:
    """'✓', '✗ 5' (failing cells) or '✗ 2 found' (a searched block's found cells)."""
    if isinstance(block, LargeBlock):
        return f"✗ {len(block.cells):,} found" if block.cells else "✓ searched"
    return "✓" if block.passed else f"✗ {block.n_failing:,}"


class BlockOverview(QWidget):
    """A grid of block thumbnails; hidden while the result has fewer than two blocks."""

    block_chosen = Signal(int)  # index as the panel counts: result.blocks, then result.large_blocks

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("block_overview")
        self.title = QLabel("Blocks")
        self.title.setToolTip("The Jacobian's blocks: a row per output, a column per input. Click one to show it.")
        self.grid = QGridLayout()
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 4, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addLayout(self.grid)
        layout.addStretch(1)
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        self.group.idClicked.connect(self._on_clicked)
        self.buttons: dict[int, QToolButton] = {}
        self._font: QFont | None = None
        self._high_contrast = False
        self.set_result(None)

    def set_text_font(self, font: QFont, *, high_contrast: bool | None = None) -> None:
        """The panel's text font on every label and thumbnail, now and for the next result
        (widgets made after a presentation style sheet is applied do not inherit it); in high
        contrast the shown (checked, black) thumbnail's failing count is a light red."""
        self._font = font
        if high_contrast is not None and high_contrast != self._high_contrast:
            self._high_contrast = high_contrast
            for button in self.buttons.values():
                if button.styleSheet():
                    button.setStyleSheet(self._failing_style())
        for widget in [self.title, *self.findChildren(QLabel), *self.buttons.values()]:
            widget.setFont(font)

    def _failing_style(self) -> str:
        """A failing count in red, readable (WCAG 4.5:1) on the thumbnail's background: white,
        or black where the high-contrast theme draws the checked one inverted."""
        style = f"QToolButton {{ color: {FAIL_INK}; font-weight: bold; }}"
        if self._high_contrast:
            style += f" QToolButton:checked {{ color: {FAIL_INK_ON_BLACK}; }}"
        return style

    def set_result(self, result: CheckResult | None) -> None:
        """One thumbnail per block of ``result`` where its output and input meet."""
        for button in self.buttons.values():
            self.group.removeButton(button)
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.buttons = {}
        blocks = [] if result is None else [*result.blocks, *result.large_blocks]
        self.setVisible(len(blocks) > 1)
        if len(blocks) < 2:
            return
        outputs = sorted({b.output for b in blocks})
        inputs = sorted({b.input for b in blocks})
        for col, k in enumerate(inputs, start=1):
            head = QLabel(result.inputs[k].name, self)  # made a child at once: it takes the panel's font
            head.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom)
            self.grid.addWidget(head, 0, col)
        for row, k in enumerate(outputs, start=1):
            head = QLabel(result.outputs[k].name if k < len(result.outputs) else f"out{k}", self)
            head.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.grid.addWidget(head, row, 0)
        for index, block in enumerate(blocks):
            button = QToolButton(self)
            button.setCheckable(True)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextUnderIcon)
            button.setIcon(QIcon(_pixmap(thumbnail(block))))
            button.setIconSize(QSize(THUMB, THUMB))
            button.setText(failing_text(block))
            rows, cols = block.shape
            button.setToolTip(f"{result.block_title(block)}: {rows:,} × {cols:,}, {failing_text(block)}")
            if not (isinstance(block, LargeBlock) and not block.cells) and failing_text(block).startswith("✗"):
                button.setStyleSheet(self._failing_style())
            self.group.addButton(button, index)
            self.buttons[index] = button
            self.grid.addWidget(button, 1 + outputs.index(block.output), 1 + inputs.index(block.input))
        if self._font is not None:
            self.set_text_font(self._font)

    def set_current(self, index: int) -> None:
        """Mark block ``index`` as the one shown."""
        button = self.buttons.get(index)
        if button is not None:
            button.setChecked(True)

    def current(self) -> int:
        return self.group.checkedId()

    def _on_clicked(self, index: int) -> None:
        self.block_chosen.emit(index)
