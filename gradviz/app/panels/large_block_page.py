"""The page of a Jacobian block too large to hold (``CheckResult.large_blocks``): what was computed
of it (its size, the failing cells its search found, whether the search finished), the controls
that compute regions of it exactly, and which computed region the heatmaps show.

A view only: the Jacobian panel keeps the regions and tells the page what to show.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.panels.region_controls import RegionControls, region_label
from gradviz.schema.results import BlockRegion, CheckResult, LargeBlock
from gradviz.schema.units import format_bytes


class LargeBlockPage(QWidget):
    """Summary, found cells and region controls of one large block."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("large_block_page")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["cell", "analytic", "numerical", "|a − n|"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setToolTip("Double-click a cell to compute the cells around it")
        self.region_controls = RegionControls()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 4)
        layout.addWidget(self.region_controls)  # first: in reach when the page scrolls
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)

    def show_block(
        self, result: CheckResult, block: LargeBlock, regions: list[BlockRegion], current: int, region: BlockRegion | None
    ) -> None:
        """``block``'s facts and found cells; ``regions`` computed of it, ``region`` (index ``current``) on screen."""
        worst = max(block.cells, key=lambda c: _gap(c.analytic, c.numerical), default=None)
        self.region_controls.set_block(block.shape, (worst.row, worst.col) if worst else None)
        self.region_controls.set_regions([region_label(r) for r in regions], current)
        rows, cols = block.shape
        itemsize = 4 if result.dtype in ("float32", "float16", "bfloat16") else 8
        found = len(block.cells)
        if block.cells:
            cells = f"<b>{found:,} failing cell{'s' if found != 1 else ''} found</b>, computed exactly (below)"
        else:
            cells = "<b>no failing cell found</b>"
        if block.complete:
            search = "The search finished: " + ("no other cell fails." if found else "every cell is within tolerance.")
        else:
            search = "The search stopped at its budget: <b>more failing cells may exist</b>."
        if result.deferred_maps:  # not too large: fast mode gave its verdict before any map
            how = f"bisection ({block.probes:,} calls)" if block.probes else "one more random projection"
            self.summary.setText(
                f"<b>{result.block_title(block)}</b>: {rows:,} × {cols:,} cells. gradcheck's fast_mode gave the "
                f"verdict from random projections, so no map was built for it; {how}: {cells}. "
                + ("Below: the cells of the block, computed for you to look at." if region is not None
                   else "The block's cells are being computed…")
            )  # fmt: skip
        elif region is None:
            self.summary.setText(
                f"<b>{result.block_title(block)}</b>: {rows:,} × {cols:,} cells, too large to hold "
                f"({format_bytes(rows * cols * itemsize)} per Jacobian), so neither matrix was built. "
                f"gradviz bisected random-sign projections of it ({block.probes:,} backward and forward calls): "
                f"{cells}. {search}"
            )
        else:  # the heatmaps need the room: the same facts, shorter
            self.summary.setText(
                f"<b>{result.block_title(block)}</b>: {rows:,} × {cols:,} cells, too large to hold; the search "
                f"({block.probes:,} calls) {'finished' if block.complete else 'stopped at its budget'} with "
                f"{found:,} failing cell{'s' if found != 1 else ''} found. Below: one region, every cell computed."
            )
        self.table.setRowCount(found)
        for r, cell in enumerate(block.cells):
            values = (
                result.cell_label(block, cell.row, cell.col),
                f"{cell.analytic + 0.0:.6g}",
                f"{cell.numerical + 0.0:.6g}",
                f"{abs(cell.analytic - cell.numerical):.2g}",
            )
            for c, text in enumerate(values):
                item = QTableWidgetItem(text)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.setVisible(found > 0)
        if region is not None:  # a few rows (it scrolls): the heatmaps take the rest
            rows_shown = sum(self.table.rowHeight(r) for r in range(min(found, 3)))
            header = self.table.horizontalHeader().sizeHint().height()
            self.table.setFixedHeight(header + rows_shown + 2 * self.table.frameWidth() + 2)
        else:
            self.table.setMinimumHeight(0)
            self.table.setMaximumHeight(16_777_215)


def _gap(a: float, n: float) -> float:
    """|a - n| for ordering found cells, NaN first."""
    gap = abs(a - n)
    return math.inf if math.isnan(gap) else gap
