"""The controls of the Jacobian panel's large-block page: which cells of a block too large to
hold to compute exactly, how far the worker is, and which computed region is on screen.

A view only: it says what the user asked for (``compute_requested``) and shows what it is told;
the panel keeps the regions and the window's RegionLink asks the worker for them. ``picker``
(which computed region is on screen) sits in the second row, as wide as its longest label: a
region's label is never cut.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QWidget,
)

from gradviz.app.panels.box_layout import Stretch, column, fill, row
from gradviz.schema.results import MAX_REGION_SIDE, REGION_SIDE, BlockRegion, region_around

ERROR_STYLE = "color: #b00020"


class RegionControls(QWidget):
    compute_requested = Signal(int, int, int, int)  # row0, col0, rows, cols
    cancel_requested = Signal()
    region_chosen = Signal(int)  # index into the block's computed regions

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._shape = (0, 0)
        self._centre = (0, 0)
        self.worst_button = QPushButton("Compute cells around the worst one")
        self.row_box, self.col_box = QSpinBox(), QSpinBox()
        self.size_box = QSpinBox()
        self.size_box.setRange(1, MAX_REGION_SIDE)
        self.size_box.setValue(REGION_SIDE)
        self.size_box.setToolTip(f"Rows and columns to compute (at most {MAX_REGION_SIDE})")
        for box in (self.row_box, self.col_box):
            box.setGroupSeparatorShown(True)
        self.compute_button = QPushButton("Compute")
        self.compute_button.setToolTip("Compute the region starting at this row and column, cell by cell")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setFormat("%v / %m")
        self.cancel_button = QPushButton("Cancel")
        self.picker = QComboBox()
        self.picker.setToolTip("Regions of this block computed so far")
        self.picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.picker_label = QLabel("Shown:")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        boxes = (("or rows from", self.row_box), ("cols from", self.col_box), ("size", self.size_box))
        first = row(self.worst_button, *(w for text, box in boxes for w in (QLabel(text), box)))
        fill(first, self.compute_button, Stretch(1))
        self.second_row = QWidget()  # shown while there is something in it
        row(self.picker_label, self.picker, self.progress, self.cancel_button, (self.status, 1), parent=self.second_row)
        column(first, self.second_row, parent=self, spacing=4)

        self.worst_button.clicked.connect(self._on_worst_clicked)
        self.compute_button.clicked.connect(self._on_compute_clicked)
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.picker.activated.connect(self.region_chosen)
        self.set_running(False)

    def set_block(self, shape: tuple[int, int], centre: tuple[int, int] | None) -> None:
        """A large block of ``shape`` (rows, cols); ``centre``: its worst found cell, if any."""
        self._shape = shape
        self._centre = centre or (0, 0)
        self.row_box.setRange(0, max(0, shape[0] - 1))
        self.col_box.setRange(0, max(0, shape[1] - 1))
        rows, cols = region_around(*self._centre, shape, self.size_box.value())
        self.row_box.setValue(rows.start)
        self.col_box.setValue(cols.start)
        where = f"row {self._centre[0]:,}, column {self._centre[1]:,}"
        self.worst_button.setToolTip(
            f"Compute every cell of the {self.size_box.value()} × {self.size_box.value()} region around {where}"
            + ("" if centre else " (no failing cell was found: the block's first cells)")
        )
        self.set_message("")

    def set_regions(self, labels: list[str], current: int) -> None:
        """The regions of this block computed so far, ``current`` on screen."""
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItems(labels)
        self.picker.setCurrentIndex(current)
        self.picker.blockSignals(False)
        self.picker.setVisible(bool(labels))
        self.picker_label.setVisible(bool(labels))
        self._update_second_row()

    def set_running(self, running: bool, text: str = "") -> None:
        """While the worker computes (or waits to): progress and Cancel instead of the buttons."""
        for widget in (self.worst_button, self.compute_button):
            widget.setEnabled(not running)
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        if running:
            self.progress.setRange(0, 0)  # busy until the first progress message
        self.set_message(text)

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    def set_message(self, text: str, *, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(ERROR_STYLE if error else "")
        self._update_second_row()

    def _update_second_row(self) -> None:
        busy = not self.cancel_button.isHidden()
        self.second_row.setVisible(busy or bool(self.status.text()) or self.picker.count() > 0)

    def _on_worst_clicked(self) -> None:
        rows, cols = region_around(*self._centre, self._shape, self.size_box.value())
        self.row_box.setValue(rows.start)
        self.col_box.setValue(cols.start)
        self.compute_requested.emit(rows.start, cols.start, len(rows), len(cols))

    def _on_compute_clicked(self) -> None:
        """From the chosen first row and column; the region ends at the block's edge."""
        side = self.size_box.value()
        r0, c0 = self.row_box.value(), self.col_box.value()
        rows, cols = min(side, self._shape[0] - r0), min(side, self._shape[1] - c0)
        self.compute_requested.emit(r0, c0, rows, cols)


def region_label(region: BlockRegion) -> str:
    """'rows 0–31 × cols 0–31  ✓' (or '✗ 3 failing'): a computed region, as the picker lists it."""
    rows, cols = region.shape
    failing = region.comparison.n_failing
    mark = f"✗ {failing:,} failing" if failing else "✓"
    return f"rows {region.row0:,}–{region.row0 + rows - 1:,} × cols {region.col0:,}–{region.col0 + cols - 1:,}  {mark}"
