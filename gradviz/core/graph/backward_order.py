"""One recorded backward: the order the engine ran the nodes, and the gradients through each.

A pre-hook and a hook on every node see each node start and finish. The leaves' ``.grad`` is put
back afterwards, so recording a backward changes nothing the caller can see.
"""

from __future__ import annotations

from functools import partial

import torch
from torch.autograd.function import BackwardCFunction

from gradviz.core.saved import dtype_name
from gradviz.core.vjp import backward
from gradviz.schema.errors import ErrorKind, from_exception
from gradviz.schema.graph import GradSummary, Node, NodeFlow

__all__ = ["record_backward"]


def record_backward(
    outputs: tuple,
    grad_outputs: list,
    objects: list,
    nodes: list[Node],
    *,
    retain_graph: bool,
    value_limit: int,
) -> tuple[list[int], dict[int, NodeFlow], str | None]:
    """One backward with a pre-hook and a hook on every node: (order, flows by node id, error)."""
    pairs = [
        (o, g)
        for o, g in zip(outputs, grad_outputs)
        # an output that is itself a leaf has no node to enter; its .grad is the caller's
        if isinstance(o, torch.Tensor) and o.grad_fn is not None and g is not None
    ]
    order: list[int] = []
    flows: dict[int, NodeFlow] = {}
    finished: set[int] = set()
    if not pairs:
        return order, flows, None

    def before(i: int, grads):
        flows[i] = NodeFlow(len(order), [summarize(g, value_limit) for g in grads])
        order.append(i)

    def after(i: int, grad_inputs, grads):
        flows[i].grad_inputs = [summarize(g, value_limit) for g in grad_inputs]
        finished.add(i)

    handles = []
    for i, obj in enumerate(objects):
        handles.append(obj.register_prehook(partial(before, i)))
        handles.append(obj.register_hook(partial(after, i)))
    leaves = [obj.variable for obj, n in zip(objects, nodes) if n.kind == "leaf"]
    old_grads = [leaf.grad for leaf in leaves]
    error = None
    try:
        for leaf in leaves:
            leaf.grad = None  # so the old gradient is neither added to nor modified in place
        backward([o for o, _ in pairs], [g for _, g in pairs], retain_graph=retain_graph, inputs=leaves or None)
    except (Exception, SystemExit) as exc:
        running = next((i for i in reversed(order) if i not in finished), None)
        error = _describe_backward_error(exc, running, objects)
    finally:
        for handle in handles:
            handle.remove()
        for leaf, grad in zip(leaves, old_grads):
            leaf.grad = grad
    return order, flows, error


def summarize(g: object, value_limit: int) -> GradSummary | None:
    """Shape, dtype and norm of a gradient; a float64 copy of it when it has <= value_limit elements."""
    if not isinstance(g, torch.Tensor):
        return None
    g = g.detach()
    as_double = g.to(torch.float64) if not g.is_complex() else g.abs().to(torch.float64)
    norm = float(torch.linalg.vector_norm(as_double)) if g.numel() else 0.0
    values = as_double.cpu().numpy().copy() if g.numel() <= value_limit else None
    return GradSummary(tuple(g.shape), dtype_name(g), norm, values)


def _describe_backward_error(exc: BaseException, running: int | None, objects: list) -> str:
    """Name the node that was running: it has a pre-hook record but no hook record."""
    node = objects[running] if running is not None else None
    filename, context = "<source>", "The recorded backward"
    if isinstance(node, BackwardCFunction):
        cls = type(node)._forward_cls
        code = getattr(cls.backward, "__code__", None)
        filename = code.co_filename if code else filename
        context = f"{cls.__name__}.backward (node {running})"
    elif node is not None:
        context = f"{node.name()} (node {running})"
    return str(from_exception(ErrorKind.BACKWARD, exc, filename, context))
