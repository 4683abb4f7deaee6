"""The memory panel's tables: the "Saved tensors" tab, every tensor each variant keeps for backward,
and on CUDA the table of end-of-forward and peak memory.

The bars say how much each variant saves; this list says why. One row per saved tensor (what it
is, shape, dtype, bytes, and the graph node and attribute that hold it, as the worker found them
with ``saved_tensors_hooks``), grouped under each variant, and above them one line per variant
that sums the rows by kind of node. A tensor whose storage an earlier row already counted says
"shared" instead of charging its bytes again, so the rows add up to the bars. The rows' texts
are ``schema.memory.tensor_rows``', the ones ``gradviz memory`` prints.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.memory_display import VARIANTS, variant_title, why_text
from gradviz.app.theme import ViewSettings
from gradviz.schema.memory import TENSOR_COLUMNS, ConvBNStudy, tensor_rows
from gradviz.schema.units import format_bytes

BYTES_COLUMN = TENSOR_COLUMNS.index("bytes")


class SavedTensorsView(QWidget):
    """A why-line and a two-level list: variant, then its saved tensors (ctx attributes last)."""

    def __init__(self, view: ViewSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.why = QLabel()
        self.why.setWordWrap(True)
        self.why.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(TENSOR_COLUMNS))
        self.tree.setHeaderLabels(list(TENSOR_COLUMNS))
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setUniformRowHeights(True)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.why)
        layout.addWidget(self.tree, 1)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()

    def set_study(self, study: ConvBNStudy | None, unit: tuple[str, int]) -> None:
        """Show a study's lists; None empties the view."""
        self.tree.clear()
        if study is None:
            self.why.setText("")
            return
        self.why.setText(f"Why: {why_text(study, unit)}")
        muted = QBrush(QColor(self.view.theme.muted))
        for name in VARIANTS:
            variant = study.variants[name]
            top = QTreeWidgetItem([variant_title(name, variant, unit)])
            top.setFirstColumnSpanned(True)
            font = self.view.theme.font(12, bold=True)
            top.setFont(0, font)
            self.tree.addTopLevelItem(top)
            for row in tensor_rows(variant):
                item = QTreeWidgetItem(list(row))
                item.setToolTip(0, "\n".join(f"{c}: {v}" for c, v in zip(TENSOR_COLUMNS, row)))
                item.setTextAlignment(
                    BYTES_COLUMN, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                )
                if row[BYTES_COLUMN].startswith("shared"):
                    for column in range(len(row)):
                        item.setForeground(column, muted)
                top.addChild(item)
            top.setFirstColumnSpanned(True)
            top.setExpanded(True)
        for column in range(len(TENSOR_COLUMNS)):
            self.tree.resizeColumnToContents(column)

    def rows(self, name: str) -> list[tuple[str, ...]]:
        """The rows shown under one variant, as texts (for tests and copying)."""
        index = VARIANTS.index(name)
        if index >= self.tree.topLevelItemCount():
            return []
        top = self.tree.topLevelItem(index)
        return [
            tuple(top.child(k).text(c) for c in range(len(TENSOR_COLUMNS))) for k in range(top.childCount())
        ]

    def title(self, name: str) -> str:
        index = VARIANTS.index(name)
        return self.tree.topLevelItem(index).text(0) if index < self.tree.topLevelItemCount() else ""

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.why.setFont(theme.font(12))
        for widget in (self.tree, self.tree.header()):
            widget.setFont(theme.font(12))


class PeakTable(QWidget):
    """CUDA memory per variant: saved, end of forward and the peak over forward + backward; shown
    for CUDA results only."""

    def __init__(self, view: ViewSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.title = QLabel("CUDA memory")
        self.table = table = QTableWidget(2, 3)
        table.setHorizontalHeaderLabels(["saved", "end of forward", "peak"])
        table.setVerticalHeaderLabels(list(VARIANTS))
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.setToolTip(
            "CUDA memory above the starting allocation: after forward, and the peak over forward + backward"
        )
        table.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        table.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Maximum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(table)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()

    def set_study(self, study: ConvBNStudy | None) -> None:
        """Fill from a CUDA study and show; hide for a CPU one or None."""
        variants = study.variants if study is not None else {}
        cuda = bool(variants) and all(variants[name].on_cuda for name in VARIANTS)
        self.setVisible(cuda)
        if not cuda:
            self.table.clearContents()
            return
        font = self.view.theme.font(12)
        for row, name in enumerate(VARIANTS):
            v = variants[name]
            for col, value in enumerate((v.saved_bytes, v.end_of_forward_bytes, v.peak_bytes)):
                item = QTableWidgetItem("—" if value is None else format_bytes(value))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setFont(font)
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()
        self.table.resizeRowsToContents()

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.title.setFont(theme.font(13, bold=True))
        for widget in (self.table, self.table.horizontalHeader(), self.table.verticalHeader()):
            widget.setFont(theme.font(12))
