"""The backward graph of one forward, as plain data: nodes, edges, saved tensors, one backward.

torchviz draws the graph from ``grad_fn`` too, but its show_saved reads only ``_saved_*`` fields:
it misses what a custom Function keeps with ``save_for_backward``, every tensor kept as a ``ctx``
attribute, and that a saved view of an input costs nothing extra. Here every node lists its own saved
tensors, each with the storage it lives in, so shared storage is counted once.

The walk happens before the recorded backward, because a backward without ``retain_graph`` frees
what the nodes saved. The model holds no torch objects: the app (another process) draws it with
``pyqtgraph.GraphItem.setData(pos=model.positions, adj=model.edges)``.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import networkx as nx
import numpy as np
import torch
from torch.autograd.function import BackwardCFunction, once_differentiable

from gradviz.schema.errors import ErrorKind, from_exception

__all__ = [
    "GradSummary",
    "GraphModel",
    "Node",
    "NodeFlow",
    "OutputInfo",
    "SavedEntry",
    "extract_graph",
    "graph_from_outputs",
    "layered_layout",
    "make_grad_outputs",
]

VIAS = ("save_for_backward", "ctx_attribute", "builtin")
ROLES = ("input", "output", "intermediate")
# Flags in display order. PyTorch reads ctx.dirty_tensors / ctx.non_differentiable and clears them
# as forward returns, and materialize_grads has no getter, so only extract_graph (which watches
# those three ctx calls during its own forward) can set the last three.
FLAGS = ("once_differentiable", "mark_dirty", "mark_non_differentiable", "materialize_grads_off")
VALUE_LIMIT = 64  # gradients with at most this many elements are kept whole

# Every @once_differentiable wrapper shares this code object.
_ONCE_DIFFERENTIABLE_CODE = once_differentiable(lambda ctx: None).__code__
_WATCHED_CTX_CALLS = ("mark_dirty", "mark_non_differentiable", "set_materialize_grads")


# --------------------------------------------------------------------------- the model


@dataclass
class SavedEntry:
    """One tensor a node keeps for backward."""

    name: str  # forward's variable name, ``saved_tensors[i]``, the ctx attribute, or the builtin's field
    shape: tuple[int, ...]
    dtype: str
    device: str
    bytes: int  # the whole storage this tensor lives in, which a view keeps alive too
    via: str  # one of VIAS; "ctx_attribute" bypasses the version check and saved_tensors_hooks
    role: str  # one of ROLES: a storage of the call's inputs (or a leaf), of its outputs, or neither
    storage_id: int  # equal ids: the same storage, counted once in saved_bytes
    shared: bool = False  # another entry (on any node) uses the same storage
    input_index: int | None = None  # role "input": which argument of the call, when known
    error: str | None = None  # could not unpack normally (e.g. modified in place after saving)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "bytes": self.bytes,
            "via": self.via,
            "device": self.device,
            "role": self.role,
            "storage_id": self.storage_id,
            "shared": self.shared,
            "input_index": self.input_index,
            "error": self.error,
        }


@dataclass
class Node:
    """One backward node: a custom Function's ctx, a built-in backward, or a leaf's AccumulateGrad."""

    id: int
    name: str  # PyTorch's name: LinearFunctionBackward, MulBackward0, AccumulateGrad
    kind: str  # "custom", "builtin" or "leaf"
    class_name: str | None = None  # custom: the Function subclass, e.g. LinearFunction
    saved: list[SavedEntry] = field(default_factory=list)
    flags: tuple[str, ...] = ()  # from FLAGS, the ones detected
    input_index: int | None = None  # leaf: which argument of the call (None: a leaf not passed in)
    input_name: str | None = None
    shape: tuple[int, ...] | None = None  # leaf: the leaf tensor's shape

    @property
    def saved_bytes(self) -> int:
        """Bytes of the distinct storages this node keeps."""
        return sum({s.storage_id: s.bytes for s in self.saved}.values())

    def to_dict(self) -> dict:
        out = {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "saved": [s.to_dict() for s in self.saved],
            "class": self.class_name,
            "flags": list(self.flags),
            "saved_bytes": self.saved_bytes,
        }
        if self.kind == "leaf":
            out["input_index"] = self.input_index
            out["input_name"] = self.input_name
            out["shape"] = list(self.shape) if self.shape is not None else None
        return out


@dataclass
class GradSummary:
    """One gradient seen by a backward hook; ``values`` only when it is small."""

    shape: tuple[int, ...]
    dtype: str
    norm: float
    values: np.ndarray | None = None  # float64 copy, shaped like the gradient

    def to_dict(self) -> dict:
        values = None
        if self.values is not None:
            values = [_finite(v) for v in self.values.ravel().tolist()]
        return {"shape": list(self.shape), "dtype": self.dtype, "norm": _finite(self.norm), "values": values}


@dataclass
class NodeFlow:
    """Gradients through one node during the recorded backward (PyTorch's hook naming).

    ``grad_outputs``: what flows in, one per forward output of the node (None: no gradient).
    ``grad_inputs``: what the node returns, one per ``next_functions`` slot.
    """

    step: int  # position in backward_order
    grad_outputs: list[GradSummary | None] = field(default_factory=list)
    grad_inputs: list[GradSummary | None] = field(default_factory=list)

    def to_dict(self, node: int) -> dict:
        return {
            "node": node,
            "step": self.step,
            "grad_outputs": [g.to_dict() if g else None for g in self.grad_outputs],
            "grad_inputs": [g.to_dict() if g else None for g in self.grad_inputs],
        }


@dataclass
class OutputInfo:
    index: int
    shape: tuple[int, ...] | None  # None: not a tensor
    dtype: str | None
    differentiable: bool
    node: int | None  # the node its gradient enters, None when not differentiable

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "shape": list(self.shape) if self.shape is not None else None,
            "dtype": self.dtype,
            "differentiable": self.differentiable,
            "node": self.node,
        }


@dataclass
class GraphModel:
    """The graph of one forward and what one backward through it did.

    Node ids are positions in ``nodes``, assigned breadth-first from the outputs, so the same
    graph always gets the same ids. ``positions[i]`` is node i's place in a layered drawing:
    outputs on top, leaves at the bottom, y growing upward (pyqtgraph's default), so every edge
    goes from a higher y to a lower one.
    """

    nodes: list[Node]
    edges: np.ndarray  # (E, 2) int64: from node id, to node id (the node's next_functions)
    edge_slots: np.ndarray  # (E,) int64: the next_functions slot each edge comes from
    positions: np.ndarray  # (N, 2) float64
    backward_order: list[int]  # node ids in the order the engine ran them
    flows: dict[int, NodeFlow]  # by node id, for the nodes that ran
    outputs: list[OutputInfo]
    backward_error: str | None = None  # the recorded backward raised; the order stops there
    seconds: dict[str, float] = field(default_factory=dict)  # walk, backward, layout

    def saved_bytes(self, vias: Sequence[str] = VIAS) -> int:
        """Bytes of the distinct storages saved through ``vias``, each storage once."""
        return sum({s.storage_id: s.bytes for n in self.nodes for s in n.saved if s.via in vias}.values())

    @property
    def saved_bytes_unique(self) -> int:
        """Everything the graph keeps alive for backward, each storage once."""
        return self.saved_bytes()

    def to_dict(self) -> dict:
        """Strict JSON (no NaN): the CLI's ``graph`` schema plus positions, flows and outputs."""
        nodes = []
        for node in self.nodes:
            entry = node.to_dict()
            entry["position"] = [_finite(v) for v in self.positions[node.id].tolist()]
            nodes.append(entry)
        flows = sorted(self.flows.items(), key=lambda item: item[1].step)
        return {
            "nodes": nodes,
            "edges": self.edges.tolist(),
            "backward_order": list(self.backward_order),
            "edge_slots": self.edge_slots.tolist(),
            "saved_bytes_unique": self.saved_bytes_unique,
            "outputs": [o.to_dict() for o in self.outputs],
            "flows": [flow.to_dict(node) for node, flow in flows],
            "backward_error": self.backward_error,
        }


# --------------------------------------------------------------------------- public entry points


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
            with _watch_ctx_calls(fn) as ctx_calls:
                outputs = fn.apply(*copies)
        except (Exception, SystemExit) as exc:
            raise from_exception(ErrorKind.FORWARD, exc, _source_file(fn), f"{fn.__name__}.forward") from None
    return _build(
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
    loaded,
    function: str | None = None,
    *,
    device: str = "cpu",
    dtype: str = "float64",
    seed: int = 0,
    value_limit: int = VALUE_LIMIT,
) -> GraphModel:
    """The graph of one Function of loaded user source, on its ``example_inputs`` (as the check uses)."""
    from gradviz.core.check import example_arguments
    from gradviz.core.inputs import resolve_device, resolve_dtype
    from gradviz.core.loader import choose_function

    fn = choose_function(loaded, function)
    prepared = example_arguments(loaded, fn, resolve_device(device), resolve_dtype(dtype), seed)
    return extract_graph(fn, prepared.args, prepared.names, seed=seed, value_limit=value_limit)


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
    return _build(
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


# --------------------------------------------------------------------------- building the model


def _build(
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
    start = time.perf_counter()
    outputs = _as_tuple(outputs)
    objects, edge_list = _walk(outputs, skip)
    index = {node: i for i, node in enumerate(objects)}

    names = list(names) + [f"in{j}" for j in range(len(names), len(inputs))]
    positions_of = {id(a): j for j, a in enumerate(inputs) if isinstance(a, torch.Tensor)}
    storages = _Storages()
    # The call's inputs, their clones (what apply received) and every leaf reached are "input"s.
    for j, a in enumerate(inputs):
        if isinstance(a, torch.Tensor):
            storages.mark(a, "input", j)
    for j, c in enumerate(copies or ()):
        if isinstance(c, torch.Tensor):
            storages.mark(c, "input", j)
    for node in objects:
        if _kind(node) == "leaf":
            storages.mark(node.variable, "input", positions_of.get(id(node.variable)))
    for o in outputs:
        if isinstance(o, torch.Tensor):
            storages.mark(o, "output", None)

    source_names: dict[type, tuple[str | None, ...] | None] = {}
    nodes = [
        _describe_node(i, obj, positions_of, names, storages, ctx_calls, source_names)
        for i, obj in enumerate(objects)
    ]
    storages.mark_shared(nodes)
    out_infos = [_output_info(i, o, index) for i, o in enumerate(outputs)]
    walked = time.perf_counter()

    if grad_outputs is None:
        grad_outputs = make_grad_outputs(outputs, seed=seed)
    order, flows, error = _record_backward(
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


def _walk(outputs: Sequence[Any], skip: set | None = None) -> tuple[list, list[tuple[int, int, int]]]:
    """Backward nodes breadth-first from the outputs' grad_fns, and edges (from, to, slot).

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


def _kind(node) -> str:
    if isinstance(node, BackwardCFunction):
        return "custom"
    if type(node).__name__ == "AccumulateGrad":
        return "leaf"
    return "builtin"


def _describe_node(i, obj, positions_of, names, storages, ctx_calls, source_names) -> Node:
    kind = _kind(obj)
    node = Node(i, obj.name().removeprefix("torch::autograd::"), kind)
    if kind == "leaf":
        leaf = obj.variable
        node.input_index = positions_of.get(id(leaf))
        node.input_name = names[node.input_index] if node.input_index is not None else None
        node.shape = tuple(leaf.shape)
    elif kind == "custom":
        cls = type(obj)._forward_cls
        node.class_name = cls.__name__
        if cls not in source_names:
            source_names[cls] = _save_for_backward_names(cls)
        node.saved = _custom_saved(obj, source_names[cls], storages) + _ctx_attribute_saved(obj, storages)
        flags = set()
        if _is_once_differentiable(cls):
            flags.add("once_differentiable")
        watched = ctx_calls.get(id(obj))
        if watched is not None and watched[0] is obj:
            flags |= watched[1]
        node.flags = tuple(f for f in FLAGS if f in flags)
    else:
        node.saved = _builtin_saved(obj, storages)
    return node


def _custom_saved(obj, source_names, storages) -> list[SavedEntry]:
    """What save_for_backward kept, named after forward's arguments to it when they are plain names."""
    error = None
    try:
        tensors = list(obj.saved_tensors)
    except RuntimeError as exc:
        # Modified in place after saving, or already freed: show what is there and why.
        error = str(exc).split("\n")[0]
        tensors = [_raw_data(raw) for raw in obj._raw_saved_tensors]
    if source_names is None or len(source_names) != len(tensors):
        source_names = (None,) * len(tensors)
    return [
        storages.entry(t, name or f"saved_tensors[{k}]", "save_for_backward", error)
        for k, (name, t) in enumerate(zip(source_names, tensors))
        if isinstance(t, torch.Tensor)
    ]


def _ctx_attribute_saved(obj, storages) -> list[SavedEntry]:
    """Tensors kept as ``ctx.name = tensor``: the node is the ctx, so they are in its __dict__."""
    entries = []
    for name, value in vars(obj).items():
        for label, t in _tensors_in(name, value):
            entries.append(storages.entry(t, label, "ctx_attribute"))
    return entries


_SAVED_FIELDS: dict[type, list[str]] = {}


def _builtin_saved(obj, storages) -> list[SavedEntry]:
    """A built-in node's ``_saved_<name>`` fields that hold tensors (sizes and scalars are skipped)."""
    fields = _SAVED_FIELDS.get(type(obj))
    if fields is None:
        fields = _SAVED_FIELDS[type(obj)] = [a for a in dir(obj) if a.startswith("_saved_")]
    entries = []
    for attr in fields:
        name, error = attr.removeprefix("_saved_"), None
        try:
            value = getattr(obj, attr)
        except RuntimeError as exc:
            error = str(exc).split("\n")[0]
            raw = getattr(obj, "_raw" + attr, None)
            value = [_raw_data(r) for r in raw] if isinstance(raw, list | tuple) else _raw_data(raw)
        for label, t in _tensors_in(name, value):
            entries.append(storages.entry(t, label, "builtin", error))
    return entries


def _raw_data(raw) -> torch.Tensor | None:
    data = getattr(raw, "data", None)
    return data if isinstance(data, torch.Tensor) else None


def _tensors_in(name: str, value) -> Iterator[tuple[str, torch.Tensor]]:
    """A tensor, or the tensors in a list, tuple or dict (one level), with labels."""
    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, list | tuple):
        for k, v in enumerate(value):
            if isinstance(v, torch.Tensor):
                yield f"{name}[{k}]", v
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, torch.Tensor):
                yield f"{name}[{k!r}]", v


def _save_for_backward_names(cls: type) -> tuple[str | None, ...] | None:
    """Names of the arguments of the one ``ctx.save_for_backward(a, b, ...)`` call in the class.

    None for an argument that is not a plain name; None for all when there is no single call
    or it unpacks a sequence (``*tensors``).
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "save_for_backward"
    ]
    if len(calls) != 1 or any(isinstance(a, ast.Starred) for a in calls[0].args):
        return None
    return tuple(a.id if isinstance(a, ast.Name) else None for a in calls[0].args)


def _is_once_differentiable(cls: type) -> bool:
    """Whether the backward PyTorch calls (``backward``, or ``vjp`` when that is defined) is wrapped."""
    user_fn = cls.vjp if cls.vjp is not torch.autograd.Function.vjp else cls.backward
    seen = 0
    while user_fn is not None and seen < 10:  # follow functools.wraps chains of other decorators
        if getattr(user_fn, "__code__", None) is _ONCE_DIFFERENTIABLE_CODE:
            return True
        user_fn, seen = getattr(user_fn, "__wrapped__", None), seen + 1
    return False


@contextmanager
def _watch_ctx_calls(fn: type[torch.autograd.Function]) -> Iterator[dict[int, tuple[object, set[str]]]]:
    """Record which flags each ctx of ``fn`` set during forward: {id(ctx): (ctx, flags)}.

    The three methods are wrapped on ``fn``'s own backward class (the type of its ctx) and put
    back afterwards; other Functions are not touched.
    """
    cls = fn._backward_cls
    calls: dict[int, tuple[object, set[str]]] = {}
    before = {name: cls.__dict__.get(name) for name in _WATCHED_CTX_CALLS}

    def watched(name: str, method):
        def call(ctx, *args, **kwargs):
            flags = calls.setdefault(id(ctx), (ctx, set()))[1]
            if name == "set_materialize_grads":
                value = args[0] if args else kwargs.get("value", True)
                (flags.discard if value else flags.add)("materialize_grads_off")
            else:
                flags.add(name)
            return method(ctx, *args, **kwargs)

        return call

    for name in _WATCHED_CTX_CALLS:
        setattr(cls, name, watched(name, getattr(cls, name)))
    try:
        yield calls
    finally:
        for name, method in before.items():
            if method is None:
                delattr(cls, name)
            else:
                setattr(cls, name, method)


class _Storages:
    """Storage keys: which storages belong to inputs and outputs, and one id per storage."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.roles: dict[tuple, tuple[str, int | None]] = {}

    @staticmethod
    def key(t: torch.Tensor) -> tuple:
        try:
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError):  # sparse and other storage-less tensors
            return ("tensor", id(t))
        if storage.nbytes() == 0:  # every empty storage may sit at address 0
            return ("empty", id(t))
        return (str(t.device), storage.data_ptr(), storage.nbytes())

    def mark(self, t: torch.Tensor, role: str, index: int | None) -> None:
        key = self.key(t)
        if key not in self.roles or (self.roles[key][0] == role and self.roles[key][1] is None):
            self.roles[key] = (role, index)

    def entry(self, t: torch.Tensor, name: str, via: str, error: str | None = None) -> SavedEntry:
        key = self.key(t)
        storage_id = self.ids.setdefault(key, len(self.ids))
        role, index = self.roles.get(key, ("intermediate", None))
        return SavedEntry(
            name=name,
            shape=tuple(t.shape),
            dtype=str(t.dtype).removeprefix("torch."),
            device=str(t.device),
            bytes=_storage_bytes(t),
            via=via,
            role=role,
            storage_id=storage_id,
            input_index=index if role == "input" else None,
            error=error,
        )

    @staticmethod
    def mark_shared(nodes: list[Node]) -> None:
        counts: dict[int, int] = {}
        for n in nodes:
            for s in n.saved:
                counts[s.storage_id] = counts.get(s.storage_id, 0) + 1
        for n in nodes:
            for s in n.saved:
                s.shared = counts[s.storage_id] > 1


def _storage_bytes(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        return t.numel() * t.element_size()


def _output_info(i: int, o, index: dict) -> OutputInfo:
    if not isinstance(o, torch.Tensor):
        return OutputInfo(i, None, None, False, None)
    node = index.get(o.grad_fn) if o.grad_fn is not None else None
    return OutputInfo(i, tuple(o.shape), str(o.dtype).removeprefix("torch."), o.requires_grad, node)


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _source_file(fn: type) -> str:
    code = getattr(getattr(fn, "forward", None), "__code__", None)
    return code.co_filename if code else "<source>"


# --------------------------------------------------------------------------- the recorded backward


def _record_backward(outputs, grad_outputs, objects, nodes, *, retain_graph, value_limit):
    """One backward with a pre-hook and a hook on every node: the order and the gradients."""
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
        flows[i] = NodeFlow(len(order), [_summary(g, value_limit) for g in grads])
        order.append(i)

    def after(i: int, grad_inputs, grads):
        flows[i].grad_inputs = [_summary(g, value_limit) for g in grad_inputs]
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
        torch.autograd.backward(
            [o for o, _ in pairs], [g for _, g in pairs], retain_graph=retain_graph, inputs=leaves or None
        )
    except (Exception, SystemExit) as exc:
        running = next((i for i in reversed(order) if i not in finished), None)
        error = _describe_backward_error(exc, running, objects)
    finally:
        for handle in handles:
            handle.remove()
        for leaf, grad in zip(leaves, old_grads):
            leaf.grad = grad
    return order, flows, error


def _describe_backward_error(exc: BaseException, running: int | None, objects) -> str:
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


def _summary(g, value_limit: int) -> GradSummary | None:
    if not isinstance(g, torch.Tensor):
        return None
    g = g.detach()
    as_double = g.to(torch.float64) if not g.is_complex() else g.abs().to(torch.float64)
    norm = float(torch.linalg.vector_norm(as_double)) if g.numel() else 0.0
    values = as_double.cpu().numpy().copy() if g.numel() <= value_limit else None
    return GradSummary(tuple(g.shape), str(g.dtype).removeprefix("torch."), norm, values)


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------- layout


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
