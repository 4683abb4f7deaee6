"""The graph panel: the backward graph of one forward, laid out by the core, and what each node
keeps for backward.

Custom Function nodes are large orange squares (the code under test), built-in backward nodes
small blue dots, leaves (AccumulateGrad) green diamonds named after the argument they
accumulate into. Gradients flow from the outputs on top down to the leaves. Clicking a node lists
its saved tensors; tensors a Function kept as plain ``ctx`` attributes are tinted, because
PyTorch neither version-checks them nor shows them to saved-tensor hooks. The step buttons (and
the arrow keys) walk the recorded backward in the order the engine ran it, showing at each node
the gradient that arrives and the gradients it returns.

Positions come from the core; all this panel computes is display prep: label placement (a label
is drawn only where it overlaps nothing, so a 200-node graph stays legible at every zoom), edge
curves and text.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.figures import DEFAULT_SIZE, export_figure, save_png, slide_size
from gradviz.app.panels.graph_details import NodeDetails
from gradviz.app.panels.graph_notes import GraphNotes, NodeLabels
from gradviz.app.panels.stale_note import StaleNote
from gradviz.app.theme import ViewSettings
from gradviz.render.graph_labels import (
    RING_GAP,
    ViewBox,
    edge_curves,
    edge_rows,
    label_priority,
    label_sizes,
    layer_gaps,
    node_positions,
    place_labels,
    symbol_scale,
    whole_graph_range,
)
from gradviz.render.graph_text import (
    CTX_MARK,
    EMPTY_TEXT,
    ERROR_COLOUR,
    KINDS,
    NOT_RUN,
    format_shape,
    node_label,
    short_label,
    summary_text,
    tip_text,
    wrapped_label,
)
from gradviz.schema.graph import GraphModel, Node, NodeFlow
from gradviz.schema.units import counted

if TYPE_CHECKING:
    from gradviz.app.state import CurrentResult, ShownRun

__all__ = ["CTX_MARK", "EMPTY_TEXT", "GraphPanel", "format_shape", "node_label"]  # the tests' names

INK = "#222"
EDGE_COLOUR = "#9a9a9a"
RING_COLOUR = "#d0021b"

STEP_KEYS = {
    Qt.Key.Key_Right: 1,
    Qt.Key.Key_Down: 1,
    Qt.Key.Key_PageDown: 1,
    Qt.Key.Key_Left: -1,
    Qt.Key.Key_Up: -1,
    Qt.Key.Key_PageUp: -1,
}
class GraphPanel(QWidget):
    """Draws a ``GraphModel`` and lists the saved tensors of the chosen node."""

    node_selected = Signal(int)

    def __init__(
        self, parent: QWidget | None = None, *, view: ViewSettings | None = None,
        current: CurrentResult | None = None, shown: ShownRun | None = None,
    ) -> None:  # fmt: skip
        """``current``: the check on screen, whose graph is drawn whenever it changes; ``shown``:
        what was asked and what is shown, whose stale reason fades the graph."""
        super().__init__(parent)
        self.view = view if view is not None else ViewSettings(self)
        self.current = current
        self._graph: GraphModel | None = None
        self._nodes: list[Node] = []
        self._index: dict[int, int] = {}  # node id -> row in self._nodes
        self._positions = np.zeros((0, 2))
        self._selected: int | None = None
        self._stepping = False  # a step button was used: nodes not run yet are drawn faded
        self._fitted = False  # the view shows the whole graph; refit on resize until the user zooms
        self._symbol_scale = 1.0
        self._build()
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()
        self.set_graph(None)
        if current is not None:
            current.changed.connect(self._on_result_changed)
        if shown is not None:
            shown.stale_changed.connect(self.set_stale)

    def _on_result_changed(self) -> None:
        self.set_graph(self.current.graph, self.current.graph_error)

    # building ---------------------------------------------------------------------------------

    def _build(self) -> None:
        self.summary = QLabel(EMPTY_TEXT)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.prev_button = QPushButton("◀ Step")
        self.next_button = QPushButton("Step ▶")
        for button, which in ((self.prev_button, "previous"), (self.next_button, "next")):
            button.setToolTip(f"Select the {which} node in the order the recorded backward ran them")
        self.step_label = QLabel("")
        self.stale_label = StaleNote()
        self.fit_button = QPushButton("Fit")
        self.fit_button.setToolTip("Show the whole graph (wheel: zoom, drag: pan)")
        bar = QHBoxLayout()
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addWidget(self.step_label, 1)
        bar.addWidget(self.fit_button)

        self.plot = pg.PlotWidget(background="w")
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.disableAutoRange()
        self.plot.setMinimumSize(160, 100)
        self.plot.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # arrow keys step when the graph has focus
        self.edge_item = pg.PlotDataItem(pen=pg.mkPen(EDGE_COLOUR, width=1.5))
        self.node_item = pg.ScatterPlotItem(pxMode=True, hoverable=True, tip=self._tip)
        self.ring_item = pg.ScatterPlotItem(
            pxMode=True, symbol="o", brush=None, pen=pg.mkPen(RING_COLOUR, width=3)
        )
        for item, z in ((self.edge_item, 0), (self.node_item, 2), (self.ring_item, 3)):
            item.setZValue(z)
            self.plot.addItem(item)
        # The legend is the plot's title and the zoom hint a row below the view, so exports carry them.
        self.notes = GraphNotes(self.plot, self.view)  # the legend above the view, the label hint below
        self.label_hint = self.notes.hint
        self.labels = NodeLabels(self.plot, self.font())  # TextItems for the labels placed, fonts per kind

        self.side = NodeDetails()  # the node's story and its tensors; scrolls when the dock is short
        self.node_info, self.details = self.side.info, self.side.table
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.plot)
        self.splitter.addWidget(self.side)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([400, 600])  # kept in proportion when first laid out: the table needs room

        self.message = QLabel(EMPTY_TEXT)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet("background: white; padding: 16px")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.splitter)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.stale_label)
        layout.addWidget(self.summary)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)

        # Labels are placed after the view settles: a pan or zoom sends many range changes.
        self._label_timer = QTimer(self)
        self._label_timer.setSingleShot(True)
        self._label_timer.setInterval(15)
        self._label_timer.timeout.connect(self._place_labels)
        view = self.plot.getViewBox()
        view.sigRangeChanged.connect(self._label_timer.start)
        view.sigResized.connect(self._on_resized)
        view.sigRangeChangedManually.connect(self._on_user_zoom)
        self.node_item.sigClicked.connect(self._on_clicked)
        self.fit_button.clicked.connect(self.fit_view)
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.plot.installEventFilter(self)
        self.plot.viewport().installEventFilter(self)

    # public API -------------------------------------------------------------------------------

    def set_graph(self, graph: GraphModel | None, error: str | None = None) -> None:
        """Draw ``graph``; with None, say why (``error``) or that there is nothing yet."""
        self._graph = graph
        self._nodes = list(graph.nodes) if graph is not None else []
        self._index = {node.id: k for k, node in enumerate(self._nodes)}
        self._flows: dict[int, NodeFlow] = dict(graph.flows) if graph is not None else {}
        self._selected = None
        self._stepping = False
        self.side.clear()
        self.ring_item.setData([])
        has_graph = bool(self._nodes)
        for button in (self.prev_button, self.next_button, self.fit_button):
            button.setEnabled(has_graph)
        self.step_label.setText("")
        self._text_sizes = np.zeros((0, 2, 2))
        if not has_graph:
            self._positions = np.zeros((0, 2))
            self.node_item.setData([])
            self.edge_item.setData([], [])
            self._show_labels([])
            self.notes.set_hint(0, 0)
            if error:
                self.summary.setText("Graph not available (details below).")
                self.message.setText(f"Graph not available\n\n{error}")
            else:
                self.summary.setText("Empty graph: nothing in it needs a gradient." if graph is not None else EMPTY_TEXT)
                self.message.setText(self.summary.text())
            colour = f"color: {ERROR_COLOUR}" if error else ""
            self.summary.setStyleSheet(colour)
            self.message.setStyleSheet(f"background: white; padding: 16px; {colour}")
            self.stack.setCurrentWidget(self.message)
            return
        self.summary.setStyleSheet("")
        self.summary.setText(summary_text(graph))
        self.stack.setCurrentWidget(self.splitter)
        self._prepare(graph)
        # the first custom Function: its saved tensors are what a user came to see
        first = next((n.id for n in self._nodes if n.kind == "custom"), self._nodes[0].id)
        self._show_node(first)
        self.fit_view()  # places the labels, the selected node's first
        self.node_selected.emit(first)

    def select_node(self, node_id: int) -> None:
        """Ring the node, list its saved tensors and gradients, and emit node_selected."""
        if node_id not in self._index:
            return
        self._show_node(node_id)
        self._place_labels()
        self.node_selected.emit(node_id)

    def _show_node(self, node_id: int) -> None:
        self._selected = node_id
        row = self._index[node_id]
        node = self._nodes[row]
        order = self._order()
        flow = self._flows.get(node_id)
        if flow is not None:
            self.step_label.setText(f"step {flow.step + 1} of {len(order)}: {short_label(node)}")
        else:
            self.step_label.setText(f"{NOT_RUN} ({counted(len(order), 'step')})")
        self.prev_button.setEnabled(bool(order) and (flow is None or flow.step > 0))
        self.next_button.setEnabled(bool(order) and (flow is None or flow.step < len(order) - 1))
        self.side.show_node(self._graph, node)
        self._restyle_nodes()

    def selected_node(self) -> int | None:
        return self._selected

    def node(self, node_id: int) -> Node | None:
        """The node with this id (None when the graph has none)."""
        row = self._index.get(node_id)
        return self._nodes[row] if row is not None else None

    def flow(self, node_id: int) -> NodeFlow | None:
        """What went through the node in the recorded backward: step, grad_outputs, grad_inputs."""
        return self._flows.get(node_id)

    def outputs_entering(self, node_id: int) -> list[int]:
        """The Function's outputs whose gradient enters backward at this node."""
        return [o.index for o in self._graph.outputs if o.node == node_id] if self._graph else []

    def stepping(self) -> bool:
        """The user is walking the backward (the step buttons or keys were used)."""
        return self._stepping

    def step_position(self) -> tuple[int, int]:
        """(step of the selected node, number of steps); step -1 when it did not run."""
        order = self._order()
        flow = self._flows.get(self._selected) if self._selected is not None else None
        return (flow.step if flow else -1), len(order)

    def set_stale(self, text: str | None) -> None:
        """Say that the graph is from an earlier run (``text`` says why); None: it is current."""
        self.stale_label.set_reason(text)
        self.plot.setEnabled(not text)
        self.plot.getPlotItem().setOpacity(0.45 if text else 1.0)

    def step(self, delta: int) -> None:
        """Select the next (``delta`` 1) or previous (-1) node in the order backward ran them."""
        order = self._order()
        if not order:
            return
        self._stepping = True
        flow = self._flows.get(self._selected) if self._selected is not None else None
        k = 0 if flow is None else min(max(flow.step + delta, 0), len(order) - 1)
        self.select_node(order[k])

    def start_walk(self) -> None:
        """Select the first node backward ran, faded nodes ahead: the start of the step-through."""
        order = self._order()
        if order:
            self._stepping = True
            self.select_node(order[0])

    def fit_view(self) -> None:
        """The whole graph, with room in pixels for the labels around the outermost nodes."""
        if not len(self._positions):
            return
        view = self.plot.getViewBox()
        x_range, y_range = whole_graph_range(self._positions, (view.width(), view.height()), self._widest_label)
        view.setRange(xRange=x_range, yRange=y_range, padding=0)
        self._fitted = True
        self._place_labels()

    def figures(self) -> dict[str, dict]:
        return {"graph": {"root": self.plot.plotItem}}

    def export(self, name: str, path: str, *, size=DEFAULT_SIZE, caption: str = "") -> None:
        """The graph (legend, labels) as PNG, SVG or PDF, without the window's state: no selection
        ring, no step-through fading, not greyed when stale (a slide shows the graph, not where
        the user's cursor was)."""
        if not self._nodes:
            raise OSError("There is no graph to export yet: run a check first.")
        stepping, opacity = self._stepping, self.plot.getPlotItem().opacity()
        self.ring_item.hide()
        self._stepping = False
        self._restyle_nodes()
        self.plot.getPlotItem().setOpacity(1.0)
        try:
            export_figure(path, size=size, caption=caption, **self.figures()[name])
        finally:
            self.ring_item.show()
            self._stepping = stepping
            self._restyle_nodes()
            self.plot.getPlotItem().setOpacity(opacity)
            self._place_labels()

    def export_png(self, path: str) -> None:
        """The graph (legend, labels), wide enough for a slide; without a graph, the panel and its
        message."""
        if self._nodes:
            self.export("graph", path, size=slide_size(0.5))
        else:
            save_png(self.grab(), path)

    # drawing ----------------------------------------------------------------------------------

    def _order(self) -> list[int]:
        """Node ids in the order the recorded backward ran them."""
        return list(self._graph.backward_order) if self._graph is not None else []

    def _prepare(self, graph: GraphModel) -> None:
        """Symbols, edges and label texts for a new graph; labels are placed per view afterwards."""
        nodes = self._nodes
        self._positions = positions = node_positions(graph.positions)
        kinds = [n.kind if n.kind in KINDS else "builtin" for n in nodes]
        self._kinds = kinds
        self._base_sizes = np.array([KINDS[k][1] for k in kinds], dtype=float)
        self._symbol_scale = 1.0
        self._brushes = {k: pg.mkBrush(v[2]) for k, v in KINDS.items()}
        faded = {}
        for kind, (_, _, fill, _) in KINDS.items():
            colour = QColor(fill)
            colour.setAlpha(55)
            faded[kind] = pg.mkBrush(colour)
        self._faded = faded
        self._pen = pg.mkPen(INK, width=1)
        self._faded_pen = pg.mkPen(200, 200, 200, width=1)
        self.node_item.setData(
            pos=positions,
            symbol=[KINDS[k][0] for k in kinds],
            size=self._base_sizes,
            brush=[self._brushes[k] for k in kinds],
            pen=self._pen,
            data=[n.id for n in nodes],
        )
        self._draw_edges(graph, positions)

        # label texts and their sizes in px; TextItems are made only for the labels shown
        self._texts = [(node_label(node), short_label(node), wrapped_label(node)) for node in nodes]
        self._measure_labels()
        self._priority = label_priority(kinds, positions)
        self._gaps = layer_gaps(positions)  # for shrinking symbols when zoomed out

    def _measure_labels(self) -> None:
        """Each label's full and short text size in px, in the theme's fonts."""
        self._text_sizes = label_sizes(self._texts, self._kinds, self.labels.measure)
        self._widest_label = float(min(self._text_sizes[:, 0, 0].max(initial=0.0), 320.0))

    def _draw_edges(self, graph: GraphModel, positions: np.ndarray) -> None:
        """Straight edges between adjacent layers; an edge that skips layers bows sideways so it
        does not run through the nodes in between (the layout puts chains in one column)."""
        rows = edge_rows(graph.edges, self._index)
        if not len(rows):
            self.edge_item.setData([], [])
            return
        xs, ys, connect = edge_curves(rows, positions)
        self.edge_item.setData(xs, ys, connect=connect)

    def _restyle_nodes(self) -> None:
        """Ring the selected node; while stepping, fade the nodes backward has not reached yet."""
        if not self._nodes:
            return
        sizes = self._base_sizes * self._symbol_scale
        self.node_item.setSize(sizes)
        current = self._flows.get(self._selected) if self._selected is not None else None
        if self._stepping and current is not None:
            done = [
                (self._flows[n.id].step if n.id in self._flows else math.inf) <= current.step for n in self._nodes
            ]
            self.node_item.setBrush(
                [(self._brushes if d else self._faded)[k] for d, k in zip(done, self._kinds)]
            )
            self.node_item.setPen([self._pen if d else self._faded_pen for d in done])
        else:
            self.node_item.setBrush([self._brushes[k] for k in self._kinds])
            self.node_item.setPen(self._pen)
        if self._selected is not None:
            row = self._index[self._selected]
            self.ring_item.setData(pos=self._positions[row : row + 1], size=sizes[row] + 2 * RING_GAP)

    def _place_labels(self) -> None:
        """Label each node that stands clear of its neighbours, where the label overlaps no node and
        no other label, in order of importance (your Functions, leaves, built-ins; the selected node
        last, so stepping never moves a label):
        full text, else the short one, else a Function's name on two lines; below, right, left or
        above the node, then beside it level with its top or bottom; else no label until the user
        zooms in. A label beside a clump of nodes would name the wrong one."""
        n = len(self._nodes)
        box = self.plot.getViewBox()
        (x0, x1), (y0, y1) = box.viewRange()
        view = ViewBox(x0, x1, y0, y1, box.width(), box.height())
        if not n or view.width < 20 or view.height < 20:
            self._show_labels([])
            return
        scale = symbol_scale(self._gaps, view)
        if abs(scale - self._symbol_scale) > 0.02:
            self._symbol_scale = scale
            self._restyle_nodes()
        selected = self._index.get(self._selected) if self._selected is not None else None
        radius = self._base_sizes * self._symbol_scale / 2
        placed = place_labels(self._positions, radius, self._text_sizes, self._priority, view, selected=selected)
        self.notes.set_hint(len(placed), n)
        self._show_labels(placed)

    def hint_text(self) -> str:
        """The note under the graph ('' when every node has its label)."""
        return self.notes.hint_text()

    def _show_labels(self, placed: list[tuple[int, int, float, float]]) -> None:
        """The placed labels (row, which text, x, y) on screen, the rest hidden."""
        self.labels.show([(self._nodes[k].id, self._kinds[k], self._texts[k][j], x, y) for k, j, x, y in placed])

    def shown_labels(self) -> dict[int, pg.TextItem]:
        """The labels on screen now, by node id (a node without one has no room at this zoom)."""
        return self.labels.shown()

    def _tip(self, x: float, y: float, data: int) -> str:  # pyqtgraph passes them by name
        """Hover text of a node."""
        return tip_text(self._nodes[self._index[data]]) if data in self._index else ""

    # theme ------------------------------------------------------------------------------------

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.setFont(theme.font(QApplication.font().pointSizeF()))
        self.summary.setFont(theme.font(13))
        self.step_label.setFont(theme.font(12))
        self.side.set_theme(theme)
        self.message.setFont(theme.font(14))
        self.stale_label.set_theme(theme)
        self.labels.set_theme(theme)
        self.edge_item.setPen(pg.mkPen(theme.ink if theme.high_contrast else EDGE_COLOUR, width=1.5 * theme.line))
        self.ring_item.setPen(pg.mkPen(RING_COLOUR, width=3 * theme.line))
        self.notes.apply_theme()
        if self._nodes:
            self._measure_labels()
            self._restyle_nodes()
            self.fit_view() if self._fitted else self._place_labels()

    # events -----------------------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Arrow keys and Page Up/Down step through the backward while the graph has focus."""
        if event.type() == QEvent.Type.KeyPress and self._nodes:
            key = event.key()
            if key in STEP_KEYS:
                self.step(STEP_KEYS[key])
                return True
            if key in (Qt.Key.Key_Home, Qt.Key.Key_End):
                order = self._order()
                if order:
                    self._stepping = True
                    self.select_node(order[0] if key == Qt.Key.Key_Home else order[-1])
                return True
        return super().eventFilter(watched, event)

    def _on_clicked(self, _item, points, *_args) -> None:
        if len(points):
            self.select_node(int(points[0].data()))

    def _on_user_zoom(self, *_args) -> None:
        self._fitted = False

    def _on_resized(self, *_args) -> None:
        self.notes.fit_legend()
        if self._fitted:
            self.fit_view()
        else:
            self._label_timer.start()
