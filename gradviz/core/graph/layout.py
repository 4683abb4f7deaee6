"""A layered drawing of the graph: outputs on top, leaves at the bottom, every edge going down."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

__all__ = ["layered_layout"]


def layered_layout(n: int, edges: np.ndarray, leaves: Sequence[int] = (), *, sweeps: int = 4) -> np.ndarray:
    """(n, 2) positions: outputs on top, leaves on the bottom layer, every edge going down.

    Layers are longest-path depths from the roots, so an edge always drops at least one layer;
    within a layer, nodes start in id order and a few barycenter sweeps (each node moved to the
    mean place of its neighbours in the layers above, then below) untangle crossings. No random
    seeds, so the same graph gets the same picture; O(sweeps * (N log N + E)).
    """
    if n == 0:
        return np.zeros((0, 2))
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(map(tuple, edges.tolist()))
    layer = [0] * n
    for v in nx.topological_sort(graph):
        for w in graph.successors(v):
            layer[w] = max(layer[w], layer[v] + 1)
    bottom = max(layer)
    for leaf in leaves:
        layer[leaf] = bottom  # a leaf has no successors, so moving it down keeps edges downward
    rows: list[list[int]] = [[] for _ in range(bottom + 1)]
    for v in range(n):
        rows[layer[v]].append(v)

    x = [0.0] * n  # place within the layer, centred on 0 as multipartite_layout centres it

    def place(row: list[int]) -> None:
        for k, v in enumerate(row):
            x[v] = k - (len(row) - 1) / 2

    def reorder(row: list[int], neighbours) -> list[int]:
        keys = []
        for v in row:
            near = [x[u] for u in neighbours(v)]
            keys.append((sum(near) / len(near) if near else x[v], x[v], v))
        return [v for *_, v in sorted(keys)]

    for row in rows:
        place(row)
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        for k in range(1, len(rows)) if downward else range(len(rows) - 2, -1, -1):
            rows[k] = reorder(rows[k], graph.predecessors if downward else graph.successors)
            place(rows[k])

    pos = nx.multipartite_layout(graph, subset_key=dict(enumerate(rows)), align="horizontal")
    positions = np.array([pos[v] for v in range(n)], dtype=np.float64).reshape(n, 2)
    positions[:, 1] *= -1  # layer 0 (the outputs) on top
    return positions
