"""The graph panel: the backward graph of one forward, laid out by the core, and what each node
keeps for backward.

Custom Function nodes are large orange squares, built-in backward nodes small blue dots, leaves
(AccumulateGrad) green diamonds labelled with the argument they accumulate into. Clicking a node
lists its saved tensors; tensors a Function stored as plain ``ctx`` attributes are tinted and
say why that matters. The step buttons walk the recorded backward in the order the engine ran it.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

STYLE = {  # kind: (symbol, size in px, fill)
    "custom": ("s", 26, "#e8710a"),
    "builtin": ("o", 15, "#4a86c8"),
    "leaf": ("d", 20, "#2e9e44"),
}
RING = "#d0021b"
EDGE = "#8a8a8a"
INK = "#222"
CTX_TINT = QColor(255, 226, 168)
LABEL_LIMIT = 120  # more nodes than this: label only custom nodes and leaves
COLUMNS = ("name", "shape", "dtype", "bytes", "via", "role")
CTX_TIP = (
    "Stored as a plain ctx attribute, not with save_for_backward: PyTorch does not check it for "
    "in-place changes (no version counter) and saved_tensors_hooks never see it."
)
EMPTY_TEXT = "No graph yet: run a check to see the backward graph."


def format_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,} B"


def node_label(node: dict) -> str:
    if node["kind"] == "leaf":
        return f"{node.get('input_name') or 'leaf'} (leaf)"
    return node["name"]


def _grad_text(grads: list) -> str:
    parts = []
    for g in grads:
        if g is None:
            parts.append("None")
        else:
            shape = "×".join(str(d) for d in g["shape"]) or "scalar"
            norm = "nan" if g["norm"] is None else f"{g['norm']:.3g}"
            parts.append(f"{shape} (norm {norm})")
    return ", ".join(parts) or "-"


class GraphPanel(QWidget):
    """Draws a graph dict (``GraphModel.to_dict()``) and lists the saved tensors of the chosen node."""

    node_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._graph: dict | None = None
        self._selected: int | None = None
        self._step: int | None = None
        self._labels: list[pg.TextItem] = []
        self._flows: dict[int, dict] = {}

        self.summary = QLabel(EMPTY_TEXT)
        self.summary.setWordWrap(True)
        self.fit_button = QPushButton("Fit")
        self.fit_button.setToolTip("Show the whole graph")
        self.prev_button = QPushButton("◀ Step")
        self.next_button = QPushButton("Step ▶")
        for button, tip in ((self.prev_button, "previous"), (self.next_button, "next")):
            button.setToolTip(f"Select the {tip} node in the order backward ran them")
        self.step_label = QLabel("")

        self.plot = pg.PlotWidget(background="w")
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.edges = pg.PlotDataItem(pen=pg.mkPen(EDGE, width=1.5), connect="pairs")
        self.nodes = pg.ScatterPlotItem(pxMode=True, hoverable=True, tip=None)
        self.ring = pg.ScatterPlotItem(
            pxMode=True, symbol="o", size=40, brush=None, pen=pg.mkPen(RING, width=3)
        )
        for item, z in ((self.edges, 0), (self.nodes, 2), (self.ring, 3)):
            item.setZValue(z)
            self.plot.addItem(item)

        self.node_info = QLabel("")
        self.node_info.setWordWrap(True)
        self.node_info.setTextFormat(Qt.TextFormat.RichText)
        self.node_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details = QTableWidget(0, len(COLUMNS))
        self.details.setHorizontalHeaderLabels(list(COLUMNS))
        self.details.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.details.verticalHeader().hide()
        self.details.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.details.horizontalHeader().setStretchLastSection(True)

        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.node_info)
        side_layout.addWidget(self.details, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.plot)
        splitter.addWidget(side)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)

        bar = QHBoxLayout()
        for widget in (self.prev_button, self.step_label, self.next_button):
            bar.addWidget(widget)
        bar.addStretch(1)
        bar.addWidget(self.fit_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.summary)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)

        self.nodes.sigClicked.connect(self._on_clicked)
        self.fit_button.clicked.connect(self.fit_view)
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.set_graph(None)

    # public API -------------------------------------------------------------------------------

    def set_graph(self, graph: dict | None, error: str | None = None) -> None:
        """Draw ``graph``; with None, say why (``error``) or that there is nothing yet."""
        self._graph = graph
        self._selected = self._step = None
        self._flows = {f["node"]: f for f in (graph or {}).get("flows", [])}
        for label in self._labels:
            self.plot.removeItem(label)
        self._labels = []
        self.details.setRowCount(0)
        self.node_info.setText("")
        self.ring.setData([])
        has_graph = bool(graph and graph["nodes"])
        for button in (self.prev_button, self.next_button, self.fit_button):
            button.setEnabled(has_graph)
        if not has_graph:
            self.nodes.setData([])
            self.edges.setData([], [])
            self.step_label.setText("")
            self.summary.setText(f"Graph not available: {error}" if error else EMPTY_TEXT)
            self.summary.setStyleSheet("color: #b00020" if error else "")
            return
        self.summary.setStyleSheet("")
        self._draw(graph)
        self.summary.setText(self._summary_text(graph))
        first = next((n["id"] for n in graph["nodes"] if n["kind"] == "custom"), graph["nodes"][0]["id"])
        self.select_node(first)
        self.fit_view()

    def select_node(self, node_id: int) -> None:
        if self._graph is None or not 0 <= node_id < len(self._graph["nodes"]):
            return
        self._selected = node_id
        node = self._graph["nodes"][node_id]
        self.ring.setData(pos=[self._positions[node_id]])
        order = self._graph["backward_order"]
        self._step = order.index(node_id) if node_id in order else None
        self.step_label.setText(f"{self._step + 1}/{len(order)}" if self._step is not None else f"–/{len(order)}")
        self.node_info.setText(self._info_html(node))
        self._fill_table(node)
        self.node_selected.emit(node_id)

    def selected_node(self) -> int | None:
        return self._selected

    def step(self, delta: int) -> None:
        """Select the next (or previous) node in backward order."""
        order = (self._graph or {}).get("backward_order") or []
        if not order:
            return
        k = 0 if self._step is None else (self._step + delta) % len(order)
        self.select_node(order[k])

    def fit_view(self) -> None:
        """The whole graph, with room for the labels under the outermost nodes."""
        if self._graph and self._graph["nodes"]:
            (x0, y0), (x1, y1) = self._positions.min(axis=0), self._positions.max(axis=0)
            width, height = max(x1 - x0, 1.0), max(y1 - y0, 1.0)
            self.plot.getViewBox().setRange(
                xRange=(x0 - 0.25 * width, x1 + 0.25 * width),
                yRange=(y0 - 0.3 * height, y1 + 0.15 * height),
                padding=0,
            )

    def export_png(self, path: str) -> None:
        """The graph and the selected node's table as one PNG."""
        if not self.grab().save(str(path), "PNG"):
            raise OSError(f"Could not write the PNG to {path}: check that the folder exists and is writable.")

    # drawing ----------------------------------------------------------------------------------

    def _draw(self, graph: dict) -> None:
        nodes = graph["nodes"]
        positions = np.array([n.get("position") or (0.0, 0.0) for n in nodes], dtype=float)
        positions = np.nan_to_num(positions)
        self._positions = positions
        spots = []
        for node, pos in zip(nodes, positions):
            symbol, size, fill = STYLE.get(node["kind"], STYLE["builtin"])
            spots.append(
                {
                    "pos": pos,
                    "symbol": symbol,
                    "size": size,
                    "brush": pg.mkBrush(fill),
                    "pen": pg.mkPen(INK, width=1),
                    "data": node["id"],
                }
            )
        self.nodes.setData(spots)
        edges = np.asarray(graph["edges"], dtype=int).reshape(-1, 2)
        if len(edges):
            ends = positions[edges.ravel()]
            self.edges.setData(ends[:, 0], ends[:, 1])
        else:
            self.edges.setData([], [])
        font = QFont()
        font.setPointSize(11)
        crowded = len(nodes) > LABEL_LIMIT
        for node, pos in zip(nodes, positions):
            if crowded and node["kind"] == "builtin":
                continue
            bold = node["kind"] == "custom"
            label = pg.TextItem(node_label(node), color=INK, anchor=(0.5, -0.45))
            label_font = QFont(font)
            label_font.setBold(bold)
            label.setFont(label_font)
            label.setPos(*pos)
            label.setZValue(4)
            self.plot.addItem(label)
            self._labels.append(label)

    @staticmethod
    def _summary_text(graph: dict) -> str:
        counts = {kind: sum(n["kind"] == kind for n in graph["nodes"]) for kind in STYLE}
        text = (
            f"{len(graph['nodes'])} nodes ({counts['custom']} custom Function, {counts['builtin']} built-in, "
            f"{counts['leaf']} leaves) · saved for backward: {format_bytes(graph['saved_bytes_unique'])} "
            "(each storage once) · click a node"
        )
        if graph.get("backward_error"):
            text += f" · backward stopped: {graph['backward_error']}"
        return text

    def _info_html(self, node: dict) -> str:
        title = node["name"]
        if node["kind"] == "custom" and node.get("class"):
            title += f" — your Function <b>{node['class']}</b>"
        elif node["kind"] == "leaf":
            shape = "×".join(str(d) for d in node.get("shape") or []) or "scalar"
            title += f" — accumulates into <b>{node.get('input_name') or 'a leaf'}</b> ({shape})"
        lines = [f"<b>{title}</b>"]
        if node.get("flags"):
            lines.append("flags: " + ", ".join(node["flags"]))
        flow = self._flows.get(node["id"])
        if flow is not None:
            lines.append(
                f"backward step {flow['step'] + 1}: gradient in {_grad_text(flow['grad_outputs'])}; "
                f"out {_grad_text(flow['grad_inputs'])}"
            )
        saved = node["saved"]
        if saved:
            lines.append(f"keeps {len(saved)} tensor(s), {format_bytes(node['saved_bytes'])}")
        elif node["kind"] != "leaf":
            lines.append("keeps no tensors for backward")
        return "<br>".join(lines)

    def _fill_table(self, node: dict) -> None:
        saved = node["saved"]
        self.details.setRowCount(len(saved))
        for row, entry in enumerate(saved):
            shape = "×".join(str(d) for d in entry["shape"]) or "scalar"
            via = entry["via"] + (" ⚠" if entry["via"] == "ctx_attribute" else "")
            role = entry["role"] + (" (shared storage)" if entry.get("shared") else "")
            values = (entry["name"], shape, entry["dtype"], format_bytes(entry["bytes"]), via, role)
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                if entry["via"] == "ctx_attribute":
                    item.setBackground(QBrush(CTX_TINT))
                    item.setToolTip(CTX_TIP)
                elif entry.get("shared"):
                    item.setToolTip("Shares its storage with another saved tensor: counted once.")
                self.details.setItem(row, column, item)

    def _on_clicked(self, _item, points, *_args) -> None:
        if len(points):
            self.select_node(int(points[0].data()))
