"""The grad_fn walk: every backward node reachable from the outputs, in a stable order."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction

__all__ = ["node_kind", "walk"]


def walk(outputs: Sequence[Any], skip: set | None = None) -> tuple[list, list[tuple[int, int, int]]]:
    """Backward nodes breadth-first from the outputs' grad_fns, and edges (from, to, slot).

    Breadth-first from the outputs in order, so the same graph always gets the same node ids.
    Nodes in ``skip`` are passed through: an edge into one goes on to its first next function.
    """
    skip = skip or set()

    def resolve(node):
        while node is not None and node in skip:
            node = node.next_functions[0][0] if node.next_functions else None
        return node

    objects: list = []
    index: dict = {}
    queue: deque = deque()

    def visit(node) -> int:
        if node not in index:
            index[node] = len(objects)
            objects.append(node)
            queue.append(node)
        return index[node]

    for o in outputs:
        root = resolve(o.grad_fn) if isinstance(o, torch.Tensor) else None
        if root is not None:
            visit(root)
    edges = []
    while queue:
        node = queue.popleft()
        for k, (next_node, _) in enumerate(node.next_functions):
            next_node = resolve(next_node)
            if next_node is not None:
                edges.append((index[node], visit(next_node), k))
    return objects, edges


def node_kind(node: object) -> str:
    """The node's kind: "custom" (a Function's ctx), "leaf" (AccumulateGrad) or "builtin"."""
    if isinstance(node, BackwardCFunction):
        return "custom"
    if type(node).__name__ == "AccumulateGrad":
        return "leaf"
    return "builtin"
