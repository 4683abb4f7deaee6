"""Where the graph's node labels go (a greedy placement on a pixel grid, so a label overlaps no
node, nor its selection ring, and no other label), how large the symbols are drawn at a zoom, and
how the edges run.

Qt-free (NumPy only, enforced by the import contracts), so the placement is tested without a
window: the graph panel measures the texts and draws; everything it places comes from here.

The placement depends on the view (its size and range) and the graph only, never on which node
is selected: stepping through the backward moves the ring, not the labels. The selected node's
label is added last, where there is room, so it never pushes another label away.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gradviz.render.graph_text import KINDS

PRIORITY = {"custom": 0, "leaf": 1, "builtin": 2}  # who gets a label first when space is short
GRID = 2  # px per cell of the label occupancy grid
LABEL_MARGIN = 1  # px around a label's text
RING_GAP = 4  # px between a symbol and its selection ring: every node keeps this room clear
SLID_EDGE = 0.0  # px a label slid to the view's end keeps from it
MIN_CLEARANCE = 12  # px: a node closer than this to another gets no label
MIN_SYMBOL_SCALE = 0.35  # symbols shrink with the zoom down to this fraction of their size
LARGEST_SYMBOL = KINDS["custom"][1]  # px of the largest symbol (your Function's square) at scale 1


@dataclass(frozen=True)
class ViewBox:
    """What the view shows: its data range and its size in pixels (y grows upward in the data)."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: float
    height: float

    def pixels_per_unit(self) -> tuple[float, float]:
        return self.width / max(self.x1 - self.x0, 1e-12), self.height / max(self.y1 - self.y0, 1e-12)

    def to_pixels(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Data positions (N, 2) as pixel x and y from the view's top-left corner."""
        sx, sy = self.pixels_per_unit()
        return (positions[:, 0] - self.x0) * sx, (self.y1 - positions[:, 1]) * sy

    def to_data(self, x: float, y: float) -> tuple[float, float]:
        sx, sy = self.pixels_per_unit()
        return self.x0 + x / sx, self.y1 - y / sy


def label_sizes(
    texts: list[tuple[str, ...]], kinds: list[str], measure: Callable[[str, str], tuple[float, float]]
) -> np.ndarray:
    """(node, text, (w, h)) px of every label with its margins, each node's texts in the order
    they are tried (full 0, short 1, wrapped 2: every node has as many); ``measure(kind, text)``
    is the text's own (width, height) in the font of that kind of node."""
    sizes = np.zeros((len(texts), max((len(t) for t in texts), default=2), 2))
    for k, (pair, kind) in enumerate(zip(texts, kinds)):
        for j, text in enumerate(pair):
            w, h = measure(kind, text)
            sizes[k, j] = (w + 2 * LABEL_MARGIN + 2, h + 2 * LABEL_MARGIN)
    return sizes


def whole_graph_range(
    positions: np.ndarray, size: tuple[float, float], widest_label: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(x range, y range) that shows every node of a view ``size`` px, with room in pixels for the
    labels beside the outermost nodes (half the widest), the legend above and the note below."""
    (x0, y0), (x1, y1) = positions.min(axis=0), positions.max(axis=0)
    if x1 - x0 < 1e-9:
        x0, x1 = x0 - 0.5, x1 + 0.5
    if y1 - y0 < 1e-9:
        y0, y1 = y0 - 0.5, y1 + 0.5
    width, height = max(size[0], 1.0), max(size[1], 1.0)
    side = min(widest_label / 2 + 14, width / 3)
    top, bottom = min(30.0, height / 4), min(52.0, height / 4)
    xs = (x1 - x0) / max(width - 2 * side, 1.0)  # data units per pixel
    ys = (y1 - y0) / max(height - top - bottom, 1.0)
    return (x0 - side * xs, x1 + side * xs), (y0 - bottom * ys, y1 + top * ys)


def label_priority(kinds: list[str], positions: np.ndarray) -> list[int]:
    """Node rows in the order they get a label: your Functions, leaves, built-ins; higher first."""
    return sorted(range(len(kinds)), key=lambda k: (PRIORITY.get(kinds[k], 2), positions[k, 1] * -1, k))


def layer_gaps(positions: np.ndarray) -> tuple[float, float]:
    """(smallest gap within a layer, smallest gap between layers) in data units; inf where none."""
    ys = np.unique(np.round(positions[:, 1], 9))
    gap_y = float(np.diff(ys).min()) if len(ys) > 1 else math.inf
    gaps = []
    for y in ys:
        xs = np.sort(positions[np.abs(positions[:, 1] - y) < 1e-9, 0])
        if len(xs) > 1:
            gaps.append(np.diff(xs).min())
    return (float(min(gaps)) if gaps else math.inf), gap_y


def symbol_scale(gaps: tuple[float, float], view: ViewBox) -> float:
    """How large the symbols are drawn (1: full size): small enough for the closest two nodes to
    keep a few pixels apart at this zoom, never below MIN_SYMBOL_SCALE."""
    sx, sy = view.pixels_per_unit()
    scale = min(gaps[1] * sy, gaps[0] * sx) / (LARGEST_SYMBOL + 8)
    return float(min(max(scale, MIN_SYMBOL_SCALE), 1.0))


def place_labels(
    positions: np.ndarray,
    radius: np.ndarray,
    sizes: np.ndarray,
    priority: list[int],
    view: ViewBox,
    *,
    selected: int | None = None,
) -> list[tuple[int, int, float, float]]:
    """(row, which text, centre x, centre y in data units) of every label shown in ``view``:
    each node that stands clear of its neighbours gets one where it overlaps no node and no other
    label, in ``priority`` order, the ``selected`` row last (so stepping never moves a label).
    ``radius``: each symbol's in px; ``sizes[k, j]``: (w, h) px of node k's text j (``label_sizes``)."""
    n = len(positions)
    if not n or view.width < 20 or view.height < 20:
        return []
    px, py = view.to_pixels(positions)
    inside = (px > -radius) & (px < view.width + radius) & (py > -radius) & (py < view.height + radius)
    rows = np.flatnonzero(inside)
    clear = clear_of_neighbours(rows, px, py, radius, n)
    order = [k for k in priority if clear[k]]
    last = selected if selected is not None and clear[selected] else None
    placed = fit_labels(order, rows, px, py, radius, sizes, view.width, view.height, last=last)
    return [(k, j, *view.to_data(cx, cy)) for k, j, cx, cy in placed]


def _cells(left: float, top: float, right: float, bottom: float) -> tuple[slice, slice]:
    return (
        slice(max(int(top // GRID), 0), max(math.ceil(bottom / GRID), 0)),
        slice(max(int(left // GRID), 0), max(math.ceil(right / GRID), 0)),
    )


def fit_labels(
    order: list[int],
    rows: np.ndarray,
    px: np.ndarray,
    py: np.ndarray,
    radius: np.ndarray,
    sizes: np.ndarray,
    width: float,
    height: float,
    *,
    last: int | None = None,
) -> list[tuple[int, int, float, float]]:
    """(row, which text, centre x px, centre y px) of each label that fits: the nodes in
    ``order`` first, then ``last`` (the selected node) if it has no label yet. ``rows``: the nodes
    in the view, each kept clear with its ring's room whether selected or not; ``sizes[k, j]``:
    (w, h) of node k's text j, tried in order (full, short, wrapped)."""
    grid = np.zeros((int(height // GRID) + 2, int(width // GRID) + 2), dtype=bool)
    mark = radius + RING_GAP  # the same room round every node: the ring may go to any of them
    for k in rows:
        grid[_cells(px[k] - mark[k], py[k] - mark[k], px[k] + mark[k], py[k] + mark[k])] = True
    placed = []
    labelled = set()
    for k in [*order, *([last] if last is not None and last not in order else [])]:
        if k in labelled:
            continue
        spot = _first_spot(grid, k, px[k], py[k], mark[k] + GRID, sizes[k], width, height)
        if spot:
            placed.append(spot)
            labelled.add(k)
    return placed


def _spots(cx: float, cy: float, r: float, w: float, h: float, corners: bool) -> tuple[tuple[float, float], ...]:
    """(left, top) of each spot a w x h label may take beside a node at (cx, cy), ``r`` px clear of
    it: below, right, left, above; or (``corners``) beside it, its bottom or its top level with
    the node's centre."""
    if not corners:
        return (
            (cx - w / 2, cy + r),  # below
            (cx + r + 2, cy - h / 2),  # right
            (cx - r - 2 - w, cy - h / 2),  # left
            (cx - w / 2, cy - r - h),  # above
        )
    return (
        (cx + r + 2, cy - h),  # right, up: its bottom level with the node's centre
        (cx + r + 2, cy),  # right, down
        (cx - r - 2 - w, cy - h),  # left, up
        (cx - r - 2 - w, cy),  # left, down
    )


def _first_spot(grid, k: int, cx: float, cy: float, r: float, sizes: np.ndarray, width: float, height: float):
    """(row, which text, centre x, centre y) of the first text and spot that is free (and marks
    it taken), None if none: every text at the four sides first, then every text at the corners
    (where a tall wrapped label beside a node of a chain clears the nodes above and below it),
    then the sides slid along the node (``_slid_along``)."""
    for phase in ("sides", "corners", "sides slid along"):
        for j, (w, h) in enumerate(sizes):
            for spot in _spots(cx, cy, r, w, h, phase == "corners"):
                for left, top in _slid_along(*spot, w, h, cx, cy, width, height) if phase == "sides slid along" else [spot]:
                    if left < 0 or top < 0 or left + w > width or top + h > height:
                        continue
                    area = _cells(left, top, left + w, top + h)
                    if not grid[area].any():
                        grid[area] = True
                        return (k, j, left + w / 2, top + h / 2)
    return None


def _slid_along(
    left: float, top: float, w: float, h: float, cx: float, cy: float, width: float, height: float
) -> list[tuple[float, float]]:
    """A side spot slid along the node's side, into the view and to either end of it (a graph
    dock a few dozen pixels tall leaves no other room), as far as the label still spans the
    node's centre, so it names that node."""
    edge = SLID_EDGE
    if left >= cx or left + w <= cx:  # right or left of the node: up or down
        tops = (min(max(top, edge), height - h - edge), edge, height - h - edge)
        return [(left, t) for t in tops if t != top and t <= cy <= t + h]
    lefts = (min(max(left, edge), width - w - edge), edge, width - w - edge)  # below or above: sideways
    return [(x, top) for x in lefts if x != left and x <= cx <= x + w]


def clear_of_neighbours(rows: np.ndarray, px: np.ndarray, py: np.ndarray, radius: np.ndarray, n: int) -> np.ndarray:
    """Nodes whose nearest neighbour is at least a symbol and a bit away: a label beside a clump
    would name the wrong node."""
    clear = np.zeros(n, dtype=bool)
    if len(rows) == 1:
        clear[rows] = True
    elif len(rows) > 1:
        p = np.stack([px[rows], py[rows]], axis=1)
        d = np.hypot(*(p[:, None, :] - p[None, :, :]).transpose(2, 0, 1))
        np.fill_diagonal(d, np.inf)
        clear[rows] = d.min(axis=1) >= np.maximum(2 * radius[rows] + 2, MIN_CLEARANCE)
    return clear


def node_positions(positions: np.ndarray) -> np.ndarray:
    """(N, 2) data positions fit to draw: a non-finite coordinate (strict JSON carries it as a
    string, or as null from older versions) becomes 0."""
    return np.nan_to_num(np.asarray(positions, dtype=float).reshape(-1, 2), nan=0.0, posinf=0.0, neginf=0.0)


def edge_rows(edges: list | np.ndarray, index: dict[int, int]) -> np.ndarray:
    """(E, 2) node rows of the edges (node id pairs) whose two ends are both in ``index`` (id -> row)."""
    pairs = np.asarray(edges, dtype=int).reshape(-1, 2)
    pairs = pairs[np.isin(pairs, list(index)).all(axis=1)] if len(pairs) else pairs
    return np.array([[index[a], index[b]] for a, b in pairs.tolist()], dtype=int).reshape(-1, 2)


def edge_curves(rows: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, y and ``connect`` of every edge (``rows``: pairs of node rows) for one PlotDataItem:
    straight between adjacent layers; an edge that skips layers bows sideways so it does not run
    through the nodes in between (the layout puts chains in one column)."""
    layers = np.unique(np.round(positions[:, 1], 9), return_inverse=True)[1].ravel()
    gaps = np.diff(np.sort(positions[:, 0]))
    gaps = gaps[gaps > 1e-9]
    bow_unit = 0.5 * float(np.median(gaps)) if len(gaps) else 0.12
    t = np.linspace(0.0, 1.0, 13)[:, None]
    xs, ys, connect = [], [], []
    for a, b in rows.tolist():
        p, q = positions[a], positions[b]
        span = abs(int(layers[a]) - int(layers[b]))
        if span <= 1:
            xs.append([p[0], q[0]])
            ys.append([p[1], q[1]])
            connect.append([True, False])
            continue
        side = np.sign(q[0] - p[0]) or (1.0 if (a + b) % 2 == 0 else -1.0)
        mid = (p + q) / 2 + np.array([side * bow_unit * (0.6 + 0.2 * min(span, 5)), 0.0])
        curve = (1 - t) ** 2 * p + 2 * (1 - t) * t * mid + t**2 * q  # quadratic Bezier
        xs.append(curve[:, 0])
        ys.append(curve[:, 1])
        connect.append([True] * (len(t) - 1) + [False])
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(connect).astype(bool)
