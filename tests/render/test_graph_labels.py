"""The graph's label placement and node texts, without Qt (``gradviz.render.graph_labels`` and
``graph_text`` are NumPy and the standard library only): the window's graph panel draws exactly
what these return."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradviz.core.graph import graph_from_outputs
from gradviz.render.graph_labels import (
    MIN_SYMBOL_SCALE,
    RING_GAP,
    ViewBox,
    edge_rows,
    label_priority,
    label_sizes,
    layer_gaps,
    node_positions,
    place_labels,
    symbol_scale,
    whole_graph_range,
)
from gradviz.render.graph_text import node_label, short_label, summary_text, wrapped_label
from gradviz.schema.graph import GraphModel, Node, SavedEntry


def layered(layers: int = 6, across: int = 7) -> tuple[np.ndarray, list[str]]:
    """A grid of nodes, one custom Function per layer, leaves on the bottom row."""
    positions = np.array([(x, -y) for y in range(layers) for x in range(across)], dtype=float)
    kinds = ["custom" if x == across // 2 else ("leaf" if y == layers - 1 else "builtin") for y in range(layers) for x in range(across)]
    return positions, kinds


def sizes_for(n: int, full: float = 90.0, short: float = 40.0) -> np.ndarray:
    """Label sizes of ``n`` nodes whose full text is ``full`` px wide and short text ``short``."""
    widths = {"full": full, "short": short}
    return label_sizes([("full", "short")] * n, ["builtin"] * n, lambda _kind, text: (widths[text], 14.0))


def boxes(placed, sizes, view: ViewBox) -> list[tuple[float, float, float, float]]:
    """Each placed label's (left, top, right, bottom) in pixels."""
    out = []
    for k, j, x, y in placed:
        (cx,), (cy,) = view.to_pixels(np.array([[x, y]]))
        w, h = sizes[k, j]
        out.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return out


def overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.fixture
def scene():
    positions, kinds = layered()
    (x0, x1), (y0, y1) = whole_graph_range(positions, (700.0, 500.0), 90.0)
    view = ViewBox(x0, x1, y0, y1, 700.0, 500.0)
    radius = np.full(len(positions), 8.0)
    sizes = sizes_for(len(positions))
    return positions, kinds, view, radius, sizes


def test_a_label_overlaps_no_node_and_no_other_label(scene):
    positions, kinds, view, radius, sizes = scene
    placed = place_labels(positions, radius, sizes, label_priority(kinds, positions), view)
    assert 0 < len(placed) <= len(positions)
    rects = boxes(placed, sizes, view)
    px, py = view.to_pixels(positions)
    nodes = [(x - r - RING_GAP, y - r - RING_GAP, x + r + RING_GAP, y + r + RING_GAP) for x, y, r in zip(px, py, radius)]
    for a, rect in enumerate(rects):
        assert all(not overlaps(rect, other) for other in rects[a + 1 :])
        assert all(not overlaps(rect, node) for node in nodes), placed[a]
        assert rect[0] >= 0 and rect[1] >= 0 and rect[2] <= view.width and rect[3] <= view.height


def test_selecting_a_node_moves_no_label(scene):
    """Stepping through the backward moves the ring, never the labels: the placement is the same
    whichever node is selected (the xfail in test_graph_panel came from the view, not from here)."""
    positions, kinds, view, radius, sizes = scene
    priority = label_priority(kinds, positions)
    unselected = place_labels(positions, radius, sizes, priority, view)
    for selected in range(len(positions)):
        assert place_labels(positions, radius, sizes, priority, view, selected=selected) == unselected


def test_a_crowded_view_labels_your_functions_first(scene):
    positions, kinds, _view, radius, _sizes = scene
    narrow = ViewBox(-0.5, 6.5, -5.5, 0.5, 260.0, 240.0)
    wide = sizes_for(len(positions), full=120.0, short=70.0)
    placed = place_labels(positions, radius * 0.6, wide, label_priority(kinds, positions), narrow)
    labelled = {k for k, *_ in placed}
    assert 0 < len(labelled) < len(positions)
    custom = [k for k, kind in enumerate(kinds) if kind == "custom"]
    assert set(custom[:-1]) <= labelled  # the bottom one's neighbours and the view's edge leave no room
    builtin_first = sorted(range(len(kinds)), key=lambda k: (kinds[k] != "builtin", k))
    placed = place_labels(positions, radius * 0.6, wide, builtin_first, narrow)
    assert not set(custom[:-1]) <= {k for k, *_ in placed}  # the order decides who gets the room


def test_whole_graph_range_shows_every_node_with_room_for_labels():
    positions, _ = layered()
    (x0, x1), (y0, y1) = whole_graph_range(positions, (600.0, 400.0), 100.0)
    assert x0 < positions[:, 0].min() and x1 > positions[:, 0].max()
    assert y0 < positions[:, 1].min() and y1 > positions[:, 1].max()
    view = ViewBox(x0, x1, y0, y1, 600.0, 400.0)
    px, _ = view.to_pixels(positions)
    assert px.min() >= 100.0 / 2 + 14 - 1e-6  # half the widest label and a margin to the left


def test_symbols_shrink_with_the_zoom_but_not_without_end():
    positions, _ = layered()
    gaps = layer_gaps(positions)
    assert gaps == (1.0, 1.0)
    assert symbol_scale(gaps, ViewBox(0, 1, 0, 1, 1000, 1000)) == 1.0
    assert symbol_scale(gaps, ViewBox(0, 1000, 0, 1000, 100, 100)) == MIN_SYMBOL_SCALE
    assert layer_gaps(np.zeros((1, 2))) == (np.inf, np.inf)


def test_positions_and_edges_fit_to_draw():
    positions = np.array([[0.0, 1.0], [np.inf, -np.inf], [np.nan, 2.0]])
    assert node_positions(positions).tolist() == [[0.0, 1.0], [0.0, 0.0], [0.0, 2.0]]
    rows = edge_rows([[5, 7], [7, 9], [5, 42]], {5: 0, 7: 1, 9: 2})
    assert rows.tolist() == [[0, 1], [1, 2]]  # the edge to a node not drawn is left out
    assert edge_rows([], {}).shape == (0, 2)


def test_node_texts():
    saved = SavedEntry("x", (16, 32), "float32", "cpu", 2048, "save_for_backward", "input", storage_id=0)
    mul = Node(0, "MulBackward0", "builtin")
    leaf = Node(1, "AccumulateGrad", "leaf", input_name="w", shape=(3, 4))
    custom = Node(2, "ScaleBackward", "custom", class_name="Scale", saved=[saved])
    assert (node_label(mul), short_label(mul)) == ("MulBackward0", "Mul")
    assert (node_label(leaf), short_label(leaf)) == ("w (3×4)", "w")
    assert short_label(custom) == "Scale"
    assert wrapped_label(mul) == "Mul" and wrapped_label(leaf) == "w" and wrapped_label(custom) == "Scale"
    empty = np.zeros((0, 2), dtype=np.int64)
    graph = GraphModel([mul, leaf, custom], empty, empty[:, 0], np.zeros((3, 2)), [], {}, [])
    text = summary_text(graph)
    assert text.startswith("3 nodes (1 custom Function, 1 built-in, 1 leaf) · saved for backward: 2.0 KiB")


def test_a_real_functions_name_wraps_between_two_of_its_words():
    """The graph of a real Function from the core's capture: its name on two lines, nothing lost."""
    from gradviz.core.graph import graph_of_source
    from gradviz.core.loader import load_file
    from gradviz.schema.library import find_builtin

    (custom,) = [n for n in graph_of_source(load_file(find_builtin("fused_conv_bn"))).nodes if n.kind == "custom"]
    first, second = wrapped_label(custom).split("\n")
    assert first + second == custom.class_name == "FusedConvBN2DFunction"
    assert (first, second) == ("FusedConv", "BN2DFunction")  # between words, nearest the middle


class Double(torch.autograd.Function):
    """2x, with a backward that saves nothing: one custom node."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def torch_node_names(y: torch.Tensor) -> list[str]:
    """The names of every node PyTorch's graph behind ``y`` holds, found by following next_functions."""
    found, todo = [], [y.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and all(node is not f for f in found):
            found.append(node)
            todo.extend(n for n, _ in node.next_functions)
    return [node.name().removeprefix("torch::autograd::") for node in found]


@pytest.mark.parametrize("n_inputs", [1, 2])
def test_the_summary_counts_a_real_graph_in_words_that_agree_with_the_number(n_inputs):
    """One leaf is "1 leaf", two are "2 leaves"; one node, one Function: singular too."""
    seeded = [torch.Generator().manual_seed(j) for j in range(n_inputs)]
    xs = [torch.randn(3, dtype=torch.float64, generator=g).requires_grad_() for g in seeded]
    y = Double.apply(xs[0] if n_inputs == 1 else xs[0] + xs[1])
    graph = graph_from_outputs(y, xs, [f"x{j}" for j in range(n_inputs)])
    names = torch_node_names(y)
    leaves, custom = names.count("AccumulateGrad"), names.count("DoubleBackward")
    assert (leaves, custom) == (n_inputs, 1) and len(graph.nodes) == len(names)
    leaf_words = {1: "1 leaf", 2: "2 leaves"}[leaves]
    text = summary_text(graph)
    assert f"({custom} custom Function, {len(names) - leaves - custom} built-in, {leaf_words}) · " in text
    assert text.startswith(f"{len(names)} nodes (")  # two or four: PyTorch's count, plural either way
