"""Where the graph's node labels go (a greedy placement on a pixel grid, so a label overlaps no
node, nor its selection ring, and no other label) and how its edges run.

The placement depends on the view (its size and range) and the graph only, never on which node
is selected: stepping through the backward moves the ring, not the labels. The selected node's
label is added last, where there is room, so it never pushes another label away.
"""

from __future__ import annotations

import math

import numpy as np

PRIORITY = {"custom": 0, "leaf": 1, "builtin": 2}  # who gets a label first when space is short
GRID = 2  # px per cell of the label occupancy grid
LABEL_MARGIN = 1  # px around a label's text
RING_GAP = 4  # px between a symbol and its selection ring: every node keeps this room clear
MIN_CLEARANCE = 12  # px: a node closer than this to another gets no label


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
    """(row, full 0 / short 1, centre x px, centre y px) of each label that fits: the nodes in
    ``order`` first, then ``last`` (the selected node) if it has no label yet. ``rows``: the nodes
    in the view, each kept clear with its ring's room whether selected or not; ``sizes[k, j]``:
    (w, h) of node k's full (j 0) and short (j 1) text."""
    grid = np.zeros((int(height // GRID) + 2, int(width // GRID) + 2), dtype=bool)
    mark = radius + RING_GAP  # the same room round every node: the ring may go to any of them
    for k in rows:
        grid[_cells(px[k] - mark[k], py[k] - mark[k], px[k] + mark[k], py[k] + mark[k])] = True
    placed = []
    labelled = set()
    for k in [*order, *([last] if last is not None and last not in order else [])]:
        if k in labelled:
            continue
        cx, cy, r = px[k], py[k], mark[k] + GRID  # a grid cell clear of the node's own square
        for j in (0, 1):
            w, h = sizes[k, j]
            spot = None
            for left, top in (
                (cx - w / 2, cy + r),  # below
                (cx + r + 2, cy - h / 2),  # right
                (cx - r - 2 - w, cy - h / 2),  # left
                (cx - w / 2, cy - r - h),  # above
            ):
                if left < 0 or top < 0 or left + w > width or top + h > height:
                    continue
                area = _cells(left, top, left + w, top + h)
                if not grid[area].any():
                    grid[area] = True
                    spot = (k, j, left + w / 2, top + h / 2)
                    break
            if spot:
                placed.append(spot)
                labelled.add(k)
                break
    return placed


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
