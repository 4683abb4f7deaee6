"""The graph panel renders real graph dicts (built by the core from the built-in examples and from
plain torch code) and answers real mouse clicks."""

from __future__ import annotations

import time
from functools import cache
from itertools import pairwise

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QImage

from gradviz.app.figures import EXPORT_WIDTH
from gradviz.app.panels.graph_panel import (
    CTX_MARK,
    EMPTY_TEXT,
    RING_COLOUR,
    GraphPanel,
    format_shape,
    node_label,
)
from gradviz.core.graph import graph_from_outputs, graph_of_source
from gradviz.core.loader import load_file
from gradviz.schema.graph import GraphModel, Node, SavedEntry
from gradviz.schema.library import find_builtin
from tests.paths import ARTIFACTS

BUILTINS = ("linear", "fused_conv_bn", "abs_product", "kill_head", "mul_constant_lazy_grads")


@cache
def builtin_graph(name: str) -> dict:
    return graph_of_source(load_file(find_builtin(name))).to_dict()


class Scale(torch.autograd.Function):
    """Keeps one tensor with save_for_backward and one as a ctx attribute, like the fused conv-BN."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        ctx.norm = w.abs() + 1
        return x * w / ctx.norm

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        n = ctx.norm
        return g * w / n, g * x * (1 / n - w * w.sign() / n**2)


@cache
def big_graph(blocks: int = 40) -> dict:
    """A residual chain of custom and built-in nodes with a leaf pair per block: 222 nodes."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, generator=gen, requires_grad=True)
    leaves, names, h, skip = [x], ["x"], x, x
    for k in range(blocks):
        w = torch.randn(8, generator=gen, requires_grad=True)
        b = torch.randn(8, generator=gen, requires_grad=True)
        leaves += [w, b]
        names += [f"w{k}", f"b{k}"]
        h = torch.tanh(Scale.apply(h, w)) + b
        if k % 4 == 3:
            h, skip = h + 0.5 * skip, h
    return graph_from_outputs(h.sum(), leaves, names).to_dict()


@pytest.fixture
def panel(qtbot):
    widget = GraphPanel()
    qtbot.addWidget(widget)
    widget.resize(1300, 560)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def custom_node(graph: dict) -> dict:
    return next(n for n in graph["nodes"] if n["kind"] == "custom")


def table_rows(panel) -> list[list[str]]:
    table = panel.details
    return [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]


def click_node(qtbot, panel, node: dict) -> None:
    """A real left click on the node's symbol, mapped afresh each try (the layout settles after
    the first paint)."""
    view = panel.plot.getViewBox()

    def click() -> bool:
        scene_pos = view.mapViewToScene(QPointF(*node["position"]))
        qtbot.mouseClick(
            panel.plot.viewport(), Qt.MouseButton.LeftButton, pos=panel.plot.mapFromScene(scene_pos)
        )
        return panel.selected_node() == node["id"]

    qtbot.waitUntil(click, timeout=5000)


def label_rects(panel) -> dict[int, QRectF]:
    return {node: label.sceneBoundingRect() for node, label in panel.shown_labels().items()}


SUBPIXEL = 0.5  # px: a label's box drawn a fraction past the view's edge (its margin, not its glyphs)


def assert_labels_readable(panel) -> None:
    """Every label shown is visible, inside the view and overlaps no other label (as painted:
    pyqtgraph updates the view's and the labels' transforms when it paints)."""
    from PySide6.QtWidgets import QApplication

    def outside() -> list:
        panel.plot.viewport().repaint()
        view = panel.plot.getViewBox().sceneBoundingRect().adjusted(-SUBPIXEL, -SUBPIXEL, SUBPIXEL, SUBPIXEL)
        return [(node, rect, view) for node, rect in label_rects(panel).items() if not view.contains(rect)]

    # a loaded machine lays the view out a few events later (labels centred on x=0 meanwhile)
    deadline = time.monotonic() + 5
    while outside() and time.monotonic() < deadline:
        QApplication.processEvents()
    view = panel.plot.getViewBox().sceneBoundingRect().adjusted(-SUBPIXEL, -SUBPIXEL, SUBPIXEL, SUBPIXEL)
    rects = label_rects(panel)
    for node, rect in rects.items():
        assert panel.shown_labels()[node].isVisible()
        assert view.contains(rect), (node, rect, view)
    items = list(rects.items())
    for k, (a, ra) in enumerate(items):
        for b, rb in items[k + 1 :]:
            assert not ra.intersects(rb), (a, b)


# --------------------------------------------------------------------------- states


def test_empty_panel_says_what_to_do(panel):
    assert panel.summary.text() == EMPTY_TEXT
    assert panel.stack.currentWidget() is panel.message
    assert "run a check" in panel.message.text()
    assert panel.selected_node() is None
    assert panel.details.rowCount() == 0
    assert not panel.next_button.isEnabled() and not panel.fit_button.isEnabled()
    panel.select_node(0)  # nothing to select: ignored
    panel.fit_view()
    assert panel.selected_node() is None


def test_error_message_then_recovery(qtbot, panel):
    error = "UserCodeError: forward of LinearFunction raised ValueError: shapes (3,4) and (5,6) do not match"
    panel.set_graph(None, error=error)
    assert panel.stack.currentWidget() is panel.message
    assert error in panel.message.text()
    assert "not available" in panel.summary.text()
    assert "color" in panel.summary.styleSheet()
    assert panel.selected_node() is None and panel.details.rowCount() == 0
    assert panel.shown_labels() == {}

    graph = builtin_graph("linear")
    panel.set_graph(GraphModel.from_dict(graph))
    assert panel.stack.currentWidget() is panel.splitter
    assert panel.summary.styleSheet() == ""
    assert panel.selected_node() == custom_node(graph)["id"]


def test_graph_without_nodes_says_so(panel):
    graph = graph_from_outputs(torch.ones(3), ()).to_dict()
    assert graph["nodes"] == []
    panel.set_graph(GraphModel.from_dict(graph))
    assert panel.stack.currentWidget() is panel.message
    assert "Empty graph" in panel.summary.text() and panel.summary.styleSheet() == ""
    assert panel.selected_node() is None


def test_backward_error_is_in_the_summary(panel):
    graph = dict(
        builtin_graph("kill_head"), backward_error="UserCodeError: KillHead.backward raised IndexError"
    )
    panel.set_graph(GraphModel.from_dict(graph))
    assert "backward stopped: UserCodeError: KillHead.backward raised IndexError" in panel.summary.text()


# --------------------------------------------------------------------------- drawing the built-ins


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_graph_is_drawn_node_for_node(qtbot, panel, name):
    graph = builtin_graph(name)
    with qtbot.waitSignal(panel.node_selected) as blocker:
        panel.set_graph(GraphModel.from_dict(graph))
    nodes = graph["nodes"]
    points = panel.node_item.points()
    assert [p.data() for p in points] == [n["id"] for n in nodes]
    np.testing.assert_allclose([[p.pos().x(), p.pos().y()] for p in points], [n["position"] for n in nodes])
    assert panel.summary.text().startswith(f"{len(nodes)} nodes (")
    # the custom node stands out: bigger than every other symbol, its own shape and colour
    by_kind = {n["kind"]: p for n, p in zip(nodes, points)}
    custom = by_kind["custom"]
    assert custom.symbol() == "s"
    for kind, point in by_kind.items():
        if kind != "custom":
            assert point.size() < custom.size() and point.symbol() != "s"
            assert point.brush().color() != custom.brush().color()
    # a small graph has room for every label: names equal the dict's
    qtbot.waitUntil(lambda: len(panel.shown_labels()) == len(nodes))
    labels = {node: label.toPlainText() for node, label in panel.shown_labels().items()}
    assert labels == {n["id"]: node_label(Node.from_dict(n)) for n in nodes}
    assert_labels_readable(panel)
    assert panel.hint_text() == ""  # every node labelled: no note
    # the first custom node is selected and its saved tensors listed right away
    first = custom_node(graph)
    assert blocker.args == [first["id"]]
    assert panel.selected_node() == first["id"]
    assert panel.details.rowCount() == len(first["saved"])
    assert f"your Function <b>{first['class']}</b>" in panel.node_info.text()


def test_your_function_keeps_its_label_in_a_narrow_panel(qtbot, panel):
    """A small panel (its view a third of it, the details beside it): the user's Function, the
    widest label in the largest font, still gets one, its name on two lines if need be."""
    graph = builtin_graph("fused_conv_bn")
    custom = custom_node(graph)
    panel.resize(600, 350)
    panel.set_graph(GraphModel.from_dict(graph))
    view = panel.plot.getViewBox()
    qtbot.waitUntil(lambda: 0 < view.width() < panel.labels.measure("custom", custom["class"])[0])
    qtbot.waitUntil(lambda: custom["id"] in panel.shown_labels())
    text = panel.shown_labels()[custom["id"]].toPlainText()
    assert text in (custom["name"], custom["class"]) or text.replace("\n", "") == custom["class"]
    assert_labels_readable(panel)


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.mm(w.t())

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g.mm(w), g.t().mm(x)


def test_your_function_is_labelled_in_a_small_graph_of_built_ins(qtbot, panel):
    """Your Function in a chain of built-ins (its output plus a bias, relu, sum), in the graph dock
    of the window at its default size: the built-ins' short names fitted beside them, while your
    Function's (the widest, in the largest font) fitted on neither side of the column and, wrapped,
    was too tall for the gap between the nodes above and below it: it was the one left unlabelled."""
    gen = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*shape, generator=gen, requires_grad=True) for shape in ((4, 3), (5, 3), (5,)))
    graph = graph_from_outputs((LinearFunction.apply(x, w) + b).relu().sum(), [x, w, b], ["x", "w", "b"])
    custom = next(n for n in graph.nodes if n.kind == "custom")
    assert custom.class_name == "LinearFunction" and len(graph.nodes) == 7
    panel.resize(829, 290)  # MainWindow's graph dock at the window's default size
    panel.set_graph(graph)
    qtbot.waitUntil(lambda: custom.id in panel.shown_labels())
    assert panel.shown_labels()[custom.id].toPlainText().replace("\n", "") in (custom.name, custom.class_name)
    assert_labels_readable(panel)
    rects = label_rects(panel)
    for node, symbol in node_rects(panel):
        for owner, rect in rects.items():
            assert not rect.intersects(symbol), f"label of {owner} over node {node}"


def test_your_function_is_labelled_in_the_graph_dock_of_a_1280x720_window(qtbot, panel):
    """The window at 1280x720 gives the graph 890x162 px, its view 44 px tall: your Function's
    label fitted on no side of its node inside the view (the leaves' labels did), and it was
    the one node left unlabelled ("2 of 3 labelled"). A side spot slides along the node, as far
    as the label still spans the node's centre."""
    graph = GraphModel.from_dict(builtin_graph("linear"))
    custom = next(n for n in graph.nodes if n.kind == "custom")
    panel.resize(890, 162)  # measured in MainWindow at 1280x701
    panel.set_graph(graph)
    qtbot.waitUntil(lambda: len(panel.shown_labels()) == len(graph.nodes))
    assert panel.shown_labels()[custom.id].toPlainText().replace("\n", "") in (custom.name, custom.class_name)
    assert_labels_readable(panel)
    rects = label_rects(panel)
    for node, symbol in node_rects(panel):
        for owner, rect in rects.items():
            assert not rect.intersects(symbol), f"label of {owner} over node {node}"


def test_leaves_are_labelled_with_the_argument_names(qtbot, panel):
    graph = builtin_graph("linear")
    panel.set_graph(GraphModel.from_dict(graph))
    leaves = [n for n in graph["nodes"] if n["kind"] == "leaf"]
    assert {n["input_name"] for n in leaves} == {"input", "weight"}
    qtbot.waitUntil(lambda: all(n["id"] in panel.shown_labels() for n in leaves))
    for leaf in leaves:
        text = panel.shown_labels()[leaf["id"]].toPlainText()
        assert text == f"{leaf['input_name']} ({format_shape(leaf['shape'])})"


# --------------------------------------------------------------------------- clicking nodes


def test_clicking_nodes_lists_their_saved_tensors(qtbot, panel):
    graph = builtin_graph("fused_conv_bn")
    panel.set_graph(GraphModel.from_dict(graph))
    custom = custom_node(graph)
    leaf = next(n for n in graph["nodes"] if n["kind"] == "leaf")

    click_node(qtbot, panel, leaf)
    assert panel.details.rowCount() == 0
    assert f"argument <b>{leaf['input_name']}</b>" in panel.node_info.text()

    with qtbot.waitSignal(panel.node_selected) as blocker:
        click_node(qtbot, panel, custom)
    assert blocker.args == [custom["id"]]
    rows = table_rows(panel)
    saved = custom["saved"]
    assert len(rows) == len(saved) == 4
    for row, entry, r in zip(rows, saved, range(len(rows))):
        assert panel.details.item(r, 0).data(Qt.ItemDataRole.UserRole) == SavedEntry.from_dict(entry)
        assert row[:3] == [entry["name"], format_shape(entry["shape"]), entry["dtype"]]
        assert row[4] == entry["via"] + (CTX_MARK if entry["via"] == "ctx_attribute" else "")
        assert row[5].startswith(entry["role"])
    assert {e["name"]: e["via"] for e in saved} == {
        "X": "save_for_backward",
        "conv_weight": "save_for_backward",
        "sum": "ctx_attribute",
        "sqrt_var": "ctx_attribute",
    }
    for r, entry in enumerate(saved):
        item = panel.details.item(r, 4)
        if entry["via"] == "ctx_attribute":
            assert "saved_tensors_hooks" in item.toolTip() and "version check" in item.toolTip()
            assert item.background().color().isValid() and item.background().style() != Qt.BrushStyle.NoBrush
        else:
            assert item.toolTip() == ""
    # the node's backward step and the gradients through it
    flow = next(f for f in graph["flows"] if f["node"] == custom["id"])
    info = panel.node_info.text()
    assert f"backward step <b>{flow['step'] + 1}</b> of {len(graph['backward_order'])}" in info
    for g in flow["grad_outputs"] + flow["grad_inputs"]:
        assert f"{format_shape(g['shape'])} (norm {g['norm']:.4g})" in info
    assert "2 as ctx attributes" in info


def test_shared_storage_is_marked(qtbot, panel):
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    graph = graph_from_outputs((x * x).sum(), (x,), ["x"]).to_dict()
    panel.set_graph(GraphModel.from_dict(graph))
    mul = next(n for n in graph["nodes"] if n["name"] == "MulBackward0")
    assert all(s["shared"] for s in mul["saved"]) and len(mul["saved"]) == 2
    click_node(qtbot, panel, mul)
    for r, row in enumerate(table_rows(panel)):
        assert row[5] == "input (x) · shared storage"  # saved as "self" and "other", both x
        assert "count once" in panel.details.item(r, 5).toolTip()
        assert "MulBackward0 (node" in panel.details.item(r, 5).toolTip()


def test_flags_are_listed(panel):
    graph = builtin_graph("mul_constant_lazy_grads")
    panel.set_graph(GraphModel.from_dict(graph))
    assert custom_node(graph)["flags"] == ["materialize_grads_off"]
    assert "flag <b>materialize_grads_off</b>" in panel.node_info.text()
    assert "None gradients" in panel.node_info.text()


# --------------------------------------------------------------------------- stepping, zoom, export


def test_step_through_backward_order(qtbot, panel):
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    graph = graph_from_outputs((x.sin() * x.exp()).sum(), (x,), ["x"]).to_dict()
    panel.set_graph(GraphModel.from_dict(graph))
    order = graph["backward_order"]
    assert len(order) == len(graph["nodes"]) == 5
    panel.select_node(order[2])
    qtbot.mouseClick(panel.prev_button, Qt.MouseButton.LeftButton)
    assert panel.selected_node() == order[1]
    qtbot.mouseClick(panel.prev_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(panel.prev_button, Qt.MouseButton.LeftButton)  # stays on the first step
    seen = [panel.selected_node()]
    assert not panel.prev_button.isEnabled()
    for _ in range(len(order) - 1):
        with qtbot.waitSignal(panel.node_selected):
            qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
        seen.append(panel.selected_node())
        node = graph["nodes"][seen[-1]]
        assert panel.step_label.text().startswith(f"step {order.index(seen[-1]) + 1} of {len(order)}: ")
        assert panel.ring_item.points()[0].pos() == QPointF(*node["position"])
    assert seen == order
    assert not panel.next_button.isEnabled()  # Step ▶ is off on the last step
    qtbot.mouseClick(panel.prev_button, Qt.MouseButton.LeftButton)
    assert panel.selected_node() == order[-2]
    # nodes backward has not reached yet are faded, the ones it ran are not
    alphas = {p.data(): p.brush().color().alpha() for p in panel.node_item.points()}
    assert alphas[order[-1]] < 255 and all(alphas[n] == 255 for n in order[:-1])


def test_fit_view_shows_every_node_after_zooming(qtbot, panel):
    graph = builtin_graph("fused_conv_bn")
    panel.set_graph(GraphModel.from_dict(graph))
    view = panel.plot.getViewBox()
    view.scaleBy((0.1, 0.1))
    (x0, x1), (y0, y1) = view.viewRange()
    assert not all(x0 <= n["position"][0] <= x1 and y0 <= n["position"][1] <= y1 for n in graph["nodes"])
    qtbot.mouseClick(panel.fit_button, Qt.MouseButton.LeftButton)
    (x0, x1), (y0, y1) = view.viewRange()
    assert all(x0 < n["position"][0] < x1 and y0 < n["position"][1] < y1 for n in graph["nodes"])
    qtbot.waitUntil(lambda: len(panel.shown_labels()) == len(graph["nodes"]))
    assert_labels_readable(panel)


def test_two_hundred_nodes_render_readable(qtbot, panel):
    graph = big_graph()
    n = len(graph["nodes"])
    assert 200 <= n <= 260
    panel.set_graph(GraphModel.from_dict(builtin_graph("linear")))  # warm up: the first TextItems are made once
    model = GraphModel.from_dict(graph)
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        panel.set_graph(model)
        timings.append(time.perf_counter() - start)
    print(
        f"set_graph on {n} nodes: best {min(timings) * 1000:.1f} ms, all {[round(t * 1000, 1) for t in timings]}"
    )
    # how fast: measured in the bench, not asserted here (the machine's load would decide it)
    assert len(panel.node_item.points()) == n
    assert panel.summary.text().startswith(f"{n} nodes (40 custom Function")
    # zoomed out, a label beside a clump would name the wrong node: fewer labels, and a hint
    assert_labels_readable(panel)
    fitted = len(panel.shown_labels())
    assert fitted < n
    assert panel.hint_text().startswith(f"{fitted} of {n} labelled")
    # zooming in on the chain labels its nodes, still without overlaps
    view = panel.plot.getViewBox()
    top = custom_node(graph)["position"]
    (x0, x1), _ = view.viewRange()
    view.setRange(
        xRange=(top[0] - (x1 - x0) / 4, top[0] + (x1 - x0) / 4), yRange=(top[1] - 0.2, top[1] + 0.02)
    )
    qtbot.waitUntil(lambda: len(panel.shown_labels()) >= 10)
    assert_labels_readable(panel)
    assert any(label.toPlainText() == "ScaleBackward" for label in panel.shown_labels().values())


def test_export_png_writes_the_graph(qtbot, panel, tmp_path):
    panel.set_graph(GraphModel.from_dict(builtin_graph("fused_conv_bn")))
    path = tmp_path / "graph.png"
    panel.export_png(str(path))
    image = QImage(str(path))
    assert not image.isNull()
    assert image.width() == EXPORT_WIDTH and image.height() > 300
    pixels = image.convertToFormat(QImage.Format.Format_RGB32)
    data = np.frombuffer(pixels.constBits(), dtype=np.uint8).reshape(image.height(), -1, 4)[
        :, : image.width(), :3
    ]
    assert (data.min(axis=2) < 128).mean() > 0.002  # dark ink: labels, outlines
    orange = (data[..., 2] > 200) & (data[..., 1] > 90) & (data[..., 1] < 140) & (data[..., 0] < 40)
    assert orange.sum() > 100  # the custom node's square (RGB e8710a, stored as BGRA)
    with pytest.raises(OSError, match=r"Could not write .*does not exist"):
        panel.export_png(str(tmp_path / "no such folder" / "graph.png"))


def test_export_png_without_a_graph_shows_the_message(panel, tmp_path):
    panel.set_graph(None, error="UserCodeError: forward raised")
    path = tmp_path / "graph.png"
    panel.export_png(str(path))
    assert QImage(str(path)).width() > 300


def test_screenshot_fused_conv_bn(qtbot, panel):
    """The picture a lecturer sees; written to test-artifacts/ for a human to look at."""
    graph = builtin_graph("fused_conv_bn")
    panel.set_graph(GraphModel.from_dict(graph))
    info = panel.node_info
    qtbot.waitUntil(lambda: len(panel.shown_labels()) == len(graph["nodes"]))
    qtbot.waitUntil(lambda: info.height() >= info.heightForWidth(info.width()))  # the layout has settled
    assert_labels_readable(panel)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "graph_panel.png"
    assert panel.grab().save(str(path), "PNG")
    assert QImage(str(path)).width() >= 1300


# ----------------------------------------------------------------- no label overlaps or is cut


def node_rects(panel) -> list[tuple[int, QRectF]]:
    """Each node's symbol in scene coordinates (as drawn, at the current symbol scale)."""
    view = panel.plot.getViewBox()
    sizes = panel.node_item.data["size"]
    found = []
    for node, position, size in zip(panel._nodes, panel._positions, sizes):
        centre = view.mapViewToScene(QPointF(*position))
        found.append((node.id, QRectF(centre.x() - size / 2, centre.y() - size / 2, size, size)))
    return found


def edge_points(panel) -> np.ndarray:
    """Points along every edge, in scene coordinates."""
    xs, ys = panel.edge_item.getData()
    view = panel.plot.getViewBox()
    return np.array([(p.x(), p.y()) for p in (view.mapViewToScene(QPointF(x, y)) for x, y in zip(xs, ys))])


def test_the_zoom_hint_is_never_drawn_over_the_graph(qtbot, panel):
    """The "m of n labelled · zoom in" note sits below the view, clear of every edge and node."""
    panel.resize(700, 420)
    panel.set_graph(GraphModel.from_dict(big_graph()))
    text = getattr(panel.label_hint, "item", None) or panel.label_hint.textItem  # (a TextItem before)
    qtbot.waitUntil(lambda: "labelled" in text.toPlainText())
    panel.plot.viewport().repaint()
    margin = text.document().documentMargin()  # the text's own box, as layout_check measures it
    hint = text.mapRectToScene(text.boundingRect().adjusted(margin, margin, -margin, -margin))
    view = panel.plot.getViewBox().sceneBoundingRect()
    assert not hint.intersects(view), (hint, view)  # edges and nodes are drawn inside the view only
    inside = [p for p in edge_points(panel) if hint.contains(QPointF(*p))]
    assert not inside
    assert panel.plot.getPlotItem().sceneBoundingRect().contains(hint)  # and not cut off


@pytest.mark.xfail(
    strict=False,
    reason="order-dependent: passes alone and in its file, but in the full suite (same xdist worker after "
    "other files) node 0's label flipped sides between two steps; cause not found yet",
)
def test_labels_overlap_no_node_and_stay_put_while_stepping(qtbot, panel):
    """Stepping through the backward moves the ring, not the labels: every node labelled at two
    steps has its label at the same place and in the same wording."""
    panel.resize(700, 600)
    graph = big_graph(8)  # 46 nodes: about half get a label at this size, the rest compete
    panel.set_graph(GraphModel.from_dict(graph))
    qtbot.waitUntil(lambda: 10 < len(panel.shown_labels()) < len(graph["nodes"]))
    seen = []
    for _ in range(len(graph["backward_order"])):
        panel.step(1)
        panel.plot.viewport().repaint()
        labels = {
            node: (label.toPlainText(), label.sceneBoundingRect().getRect())
            for node, label in panel.shown_labels().items()
        }
        rects = label_rects(panel)
        for node, symbol in node_rects(panel):
            for owner, rect in rects.items():
                assert not rect.intersects(symbol), f"label of {owner} over node {node}"
        seen.append((panel.selected_node(), labels))
    moved = []
    for (a, first), (b, second) in pairwise(seen):
        for node in set(first) & set(second):
            if first[node] != second[node]:
                moved.append((node, a, b, first[node], second[node]))
        lost = set(first) - set(second) - {a}  # only the node selected before may lose its extra label
        assert not lost, (a, b, lost)
    assert not moved, moved[:3]


def ring_pixels(image: QImage) -> int:
    """Pixels of the selection ring's red (RING_COLOUR #d0021b, stored as BGRA), give or take
    antialiasing."""
    pixels = image.convertToFormat(QImage.Format.Format_RGB32)
    data = np.frombuffer(pixels.constBits(), dtype=np.uint8).reshape(image.height(), -1, 4)[:, : image.width(), :3]
    blue, green, red = (data[..., k].astype(int) for k in range(3))
    return int(((red > 180) & (green < 40) & (blue < 60)).sum())


def test_exports_show_the_graph_not_the_windows_state(qtbot, panel, tmp_path):
    """A slide shows the graph: no selection ring, no step-through fading, even while the window
    shows both; the window keeps them."""
    panel.set_graph(GraphModel.from_dict(builtin_graph("fused_conv_bn")))
    panel.start_walk()
    panel.step(1)
    assert panel.stepping() and panel.selected_node() is not None
    assert ring_pixels(panel.plot.grab().toImage()) > 20  # on screen: the ring is drawn
    png, svg = tmp_path / "graph.png", tmp_path / "graph.svg"
    panel.export("graph", str(png))
    panel.export("graph", str(svg))
    assert ring_pixels(QImage(str(png))) == 0
    assert RING_COLOUR.lower() not in svg.read_text(encoding="utf-8").lower()
    assert panel.stepping() and panel.ring_item.isVisible()  # the window's state is as it was
    assert ring_pixels(panel.plot.grab().toImage()) > 20
