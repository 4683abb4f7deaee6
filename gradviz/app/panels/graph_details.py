"""Beside the graph: the chosen node's story over the table of the tensors it keeps.

The words come from ``gradviz.render.graph_text`` (Qt-free); this module only puts them in widgets.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradviz.render.graph_text import CTX_MARK, CTX_TIP, ERROR_COLOUR, format_shape, info_html
from gradviz.schema.graph import GraphModel, Node
from gradviz.schema.units import format_bytes

CTX_TINT = QColor(255, 226, 168)
COLUMNS = ("name", "shape", "dtype", "bytes", "via", "role")


def fill_table(table: QTableWidget, graph: GraphModel, node: Node) -> None:
    """One row per tensor the node keeps; ctx attributes tinted, shared storage in bold."""
    owners: dict[int, list[str]] = {}  # storage id -> the nodes that save it
    for other in graph.nodes:
        for s in other.saved:
            owners.setdefault(s.storage_id, []).append(f"{other.name} (node {other.id})")
    names = {n.input_index: n.input_name for n in graph.nodes if n.kind == "leaf"}
    table.setRowCount(len(node.saved))
    for row, entry in enumerate(node.saved):
        ctx = entry.via == "ctx_attribute"
        role = entry.role
        argument = names.get(entry.input_index) if role == "input" else None
        if argument and argument != entry.name:
            role += f" ({argument})"  # e.g. a view of the argument, saved under another name
        if entry.shared:
            role += " · shared storage"
        values = (
            entry.name + (" (error)" if entry.error else ""),
            format_shape(entry.shape),
            entry.dtype,
            format_bytes(entry.bytes),
            entry.via + (CTX_MARK if ctx else ""),
            role,
        )
        tips = []
        if ctx:
            tips.append(CTX_TIP)
        if entry.shared:
            others = ", ".join(dict.fromkeys(owners.get(entry.storage_id, [])))
            tips.append(
                f"Shares its storage with another saved tensor, so its bytes count once. Saved by: {others}."
            )
        if entry.error:
            tips.append(f"Could not be unpacked normally: {entry.error}")
        for column, value in enumerate(values):
            item = QTableWidgetItem(value)
            if column == 0:
                item.setData(Qt.ItemDataRole.UserRole, entry)
            if ctx:
                item.setBackground(QBrush(CTX_TINT))
            if entry.error:
                item.setForeground(QBrush(QColor(ERROR_COLOUR)))
            if entry.shared and column in (3, 5):
                bold = item.font()
                bold.setBold(True)
                item.setFont(bold)
            if tips:
                item.setToolTip("\n\n".join(tips))
            table.setItem(row, column, item)


class NodeDetails(QScrollArea):
    """Beside the graph: the chosen node's story (``info``) over the tensors it keeps (``table``);
    it scrolls when the dock is short."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.RichText)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.info.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.table.setMinimumHeight(90)
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.addWidget(self.info)
        layout.addWidget(self.table, 1)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(content)

    def clear(self) -> None:
        self.table.setRowCount(0)
        self.info.setText("")

    def show_node(self, graph: GraphModel, node: Node) -> None:
        self.info.setText(info_html(graph, node))
        fill_table(self.table, graph, node)

    def set_theme(self, theme) -> None:
        self.info.setFont(theme.font(12))
        self.table.setFont(theme.font(12))
        self.table.horizontalHeader().setFont(theme.font(12, bold=True))
