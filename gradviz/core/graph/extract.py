"""The entry points: the graph of one Function call, of loaded source, or behind any outputs.

Each walks the graph first, then records one backward, then lays it out. The walk comes before the
backward because a backward without ``retain_graph`` frees what the nodes saved.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from gradviz.core.graph.backward_order import record_backward
from gradviz.core.graph.build import describe_nodes, output_info
from gradviz.core.graph.ctx_calls import watch_ctx_calls
from gradviz.core.graph.layout import layered_layout
from gradviz.core.graph.walk import walk
from gradviz.schema.errors import ErrorKind, from_exception
from gradviz.schema.graph import VALUE_LIMIT, GraphModel
from gradviz.schema.settings import CheckSettings

__all__ = ["extract_graph", "graph_from_outputs", "graph_of_source", "make_grad_outputs"]


def extract_graph(
    fn: type[torch.autograd.Function],
    args: Sequence[Any] | torch.Tensor,
    names: Sequence[str] | None = None,
    *,
    seed: int = 0,
    value_limit: int = VALUE_LIMIT,
) -> GraphModel:
    """Run ``fn.apply(*args)`` once and return its graph and one recorded backward.

    Like the check, apply gets clones of the tensor arguments, so a Function that modifies an
    input in place (mark_dirty) works and the caller's tensors are untouched; the clones'
    CloneBackward0 nodes are gradviz's, not the user's, and are left out, so each leaf is the
    argument itself. While forward runs, the Function's ctx calls to mark_dirty,
    mark_non_differentiable and set_materialize_grads are watched: PyTorch keeps no readable
    trace of them afterwards.
    """
    from gradviz.core.loader import argument_names

    args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    names = list(names) if names is not None else argument_names(fn, len(args))
    # A non-leaf argument would drag its own history into the graph: cut it here.
    args = tuple(
        a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) and not a.is_leaf else a
        for a in args
    )
    with torch.enable_grad():
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        clone_nodes = {c.grad_fn for c in copies if isinstance(c, torch.Tensor) and c.grad_fn is not None}
        try:
            with watch_ctx_calls(fn) as ctx_calls:
                outputs = fn.apply(*copies)
        except (Exception, SystemExit) as exc:
            raise from_exception(ErrorKind.FORWARD, exc, _source_file(fn), f"{fn.__name__}.forward") from None
    return _assemble(
        outputs,
        args,
        names,
        copies=copies,
        skip=clone_nodes,
        ctx_calls=ctx_calls,
        grad_outputs=None,
        seed=seed,
        retain_graph=False,
        value_limit=value_limit,
    )


def graph_of_source(
    loaded: Any,
    function: str | None = None,
    settings: CheckSettings | None = None,
    *,
    value_limit: int = VALUE_LIMIT,
) -> GraphModel:
    """The graph of one Function of loaded user source, at the very inputs the check uses with ``settings``
    (``example_inputs`` on its device and dtype, seeded, jittered)."""
    from gradviz.core.prepare import prepare_source

    settings = settings or CheckSettings()
    prepared = prepare_source(loaded, function, settings)
    return extract_graph(
        prepared.fn, prepared.inputs.args, prepared.inputs.names, seed=settings.seed, value_limit=value_limit
    )


def graph_from_outputs(
    outputs: torch.Tensor | Sequence[Any],
    inputs: Sequence[Any] = (),
    names: Sequence[str] | None = None,
    *,
    grad_outputs: Sequence[torch.Tensor | None] | None = None,
    seed: int = 0,
    retain_graph: bool = True,
    value_limit: int = VALUE_LIMIT,
) -> GraphModel:
    """The graph behind ``outputs`` of any forward (an ``nn.Module``, plain ops, Functions).

    ``inputs`` (with ``names``) label the leaves and decide which saved tensors are "input"s;
    every leaf reached counts as an input too (a module's parameters, say). The recorded backward
    uses ``grad_outputs`` (default: ``make_grad_outputs(outputs, seed=seed)``); it leaves every
    leaf's ``.grad`` as it was and, with ``retain_graph``, the graph usable afterwards.
    """
    names = list(names) if names is not None else [f"in{j}" for j in range(len(inputs))]
    return _assemble(
        outputs,
        tuple(inputs),
        names,
        copies=None,
        skip=set(),
        ctx_calls={},
        grad_outputs=grad_outputs,
        seed=seed,
        retain_graph=retain_graph,
        value_limit=value_limit,
    )


def make_grad_outputs(outputs: torch.Tensor | Sequence[Any], *, seed: int = 0) -> list[torch.Tensor | None]:
    """Standard-normal gradients for the differentiable outputs (None for the others).

    Random rather than ones, because ones hide bugs a sum cannot see (a transposed weight
    gives the same column sums); drawn on the CPU from a private generator so the user's RNG is
    untouched and every device gets the same numbers.
    """
    generator = torch.Generator().manual_seed(seed)
    grads: list[torch.Tensor | None] = []
    for o in _as_tuple(outputs):
        if isinstance(o, torch.Tensor) and o.requires_grad:
            g = torch.randn(o.shape, generator=generator, dtype=torch.float64)
            grads.append(g.to(device=o.device, dtype=o.dtype))
        else:
            grads.append(None)
    return grads


def _assemble(
    outputs,
    inputs: tuple,
    names: list[str],
    *,
    copies: list | None,
    skip: set,
    ctx_calls: dict,
    grad_outputs,
    seed: int,
    retain_graph: bool,
    value_limit: int,
) -> GraphModel:
    """Walk, describe, record one backward, lay out: the GraphModel, with each stage timed."""
    start = time.perf_counter()
    outputs = _as_tuple(outputs)
    objects, edge_list = walk(outputs, skip)
    index = {node: i for i, node in enumerate(objects)}
    names = list(names) + [f"in{j}" for j in range(len(names), len(inputs))]
    nodes = describe_nodes(
        objects, inputs=inputs, names=names, copies=copies, outputs=outputs, ctx_calls=ctx_calls
    )
    out_infos = [output_info(i, o, index) for i, o in enumerate(outputs)]
    walked = time.perf_counter()

    if grad_outputs is None:
        grad_outputs = make_grad_outputs(outputs, seed=seed)
    order, flows, error = record_backward(
        outputs, list(grad_outputs), objects, nodes, retain_graph=retain_graph, value_limit=value_limit
    )
    ran = time.perf_counter()

    edges = np.array([(a, b) for a, b, _ in edge_list], dtype=np.int64).reshape(-1, 2)
    slots = np.array([k for _, _, k in edge_list], dtype=np.int64)
    leaves = [n.id for n in nodes if n.kind == "leaf"]
    positions = layered_layout(len(nodes), edges, leaves)
    end = time.perf_counter()
    return GraphModel(
        nodes=nodes,
        edges=edges,
        edge_slots=slots,
        positions=positions,
        backward_order=order,
        flows=flows,
        outputs=out_infos,
        backward_error=error,
        seconds={"walk": walked - start, "backward": ran - walked, "layout": end - ran, "total": end - start},
    )


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _source_file(fn: type) -> str:
    code = getattr(getattr(fn, "forward", None), "__code__", None)
    return code.co_filename if code else "<source>"
