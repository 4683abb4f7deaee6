"""Nodes from a walked graph: names, kinds, flags, and every tensor each node keeps for backward.

torchviz draws the graph from ``grad_fn`` too, but its show_saved reads only ``_saved_*`` fields:
it misses what a custom Function keeps with ``save_for_backward``, every tensor kept as a ``ctx``
attribute, and that a saved view of an input costs nothing extra. Here every node lists its own
saved tensors, each with the storage it lives in (``gradviz.core.saved``), so shared storage is
counted once, and with its role in the call: a storage of an input, of an output, or neither.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch
from torch.autograd.function import BackwardCFunction

from gradviz.core.custom_ops import backward_node_op
from gradviz.core.function_info import is_once_differentiable, save_for_backward_names
from gradviz.core.graph.walk import node_kind
from gradviz.core.saved import Storages, ctx_attributes, dtype_name, storage_key, tensors_in
from gradviz.schema.graph import FLAGS, Node, OutputInfo, SavedEntry

__all__ = ["describe_nodes", "output_info"]


def describe_nodes(
    objects: list,
    *,
    inputs: Sequence,
    names: list[str],
    copies: Sequence | None,
    outputs: Sequence,
    ctx_calls: dict,
) -> list[Node]:
    """One Node per walked object (ids are positions in ``objects``), with its saved entries.

    The call's inputs, their clones (what apply received) and every leaf reached are "input"s;
    the call's outputs are "output"s.
    """
    positions_of = {id(a): j for j, a in enumerate(inputs) if isinstance(a, torch.Tensor)}
    saved = _SavedEntries()
    for j, a in enumerate(inputs):
        if isinstance(a, torch.Tensor):
            saved.mark(a, "input", j)
    for j, c in enumerate(copies or ()):
        if isinstance(c, torch.Tensor):
            saved.mark(c, "input", j)
    for obj in objects:
        if node_kind(obj) == "leaf":
            saved.mark(obj.variable, "input", positions_of.get(id(obj.variable)))
    for o in outputs:
        if isinstance(o, torch.Tensor):
            saved.mark(o, "output", None)

    source_names: dict[type, tuple[str | None, ...] | None] = {}
    nodes = [
        _describe_node(i, obj, positions_of, names, saved, ctx_calls, source_names)
        for i, obj in enumerate(objects)
    ]
    saved.finish(nodes)
    return nodes


def output_info(i: int, o: object, index: dict) -> OutputInfo:
    """Output ``i``: its shape and dtype, and the node (by walked object) its gradient enters."""
    if not isinstance(o, torch.Tensor):
        return OutputInfo(i, None, None, False, None)
    node = index.get(o.grad_fn) if o.grad_fn is not None else None
    return OutputInfo(i, tuple(o.shape), dtype_name(o), o.requires_grad, node)


class _SavedEntries:
    """SavedEntry objects over the shared storage accountant, with each storage's role in the call."""

    def __init__(self) -> None:
        self.storages = Storages()
        self.roles: dict[tuple, tuple[str, int | None]] = {}

    def mark(self, t: torch.Tensor, role: str, index: int | None) -> None:
        """The first mark wins, except that a known argument index replaces an unknown one."""
        key = storage_key(t)
        if key not in self.roles or (self.roles[key][0] == role and self.roles[key][1] is None):
            self.roles[key] = (role, index)

    def entry(self, t: torch.Tensor, name: str, via: str, error: str | None = None) -> SavedEntry:
        storage_id = self.storages.add(t)
        role, index = self.roles.get(storage_key(t), ("intermediate", None))
        return SavedEntry(
            name=name,
            shape=tuple(t.shape),
            dtype=dtype_name(t),
            device=str(t.device),
            bytes=self.storages.bytes_of(storage_id),
            via=via,
            role=role,
            storage_id=storage_id,
            input_index=index if role == "input" else None,
            error=error,
        )

    def finish(self, nodes: list[Node]) -> None:
        """Every entry of a storage gets its one byte count, and ``shared`` when it is not alone."""
        counts = Counter(s.storage_id for n in nodes for s in n.saved)
        for n in nodes:
            for s in n.saved:
                s.bytes = self.storages.bytes_of(s.storage_id)
                s.shared = counts[s.storage_id] > 1


def _describe_node(i, obj, positions_of, names, saved: _SavedEntries, ctx_calls, source_names) -> Node:
    kind = node_kind(obj)
    node = Node(i, obj.name().removeprefix("torch::autograd::"), kind)
    if kind == "leaf":
        leaf = obj.variable
        node.input_index = positions_of.get(id(leaf))
        node.input_name = names[node.input_index] if node.input_index is not None else None
        node.shape = tuple(leaf.shape)
    elif kind == "custom":
        cls = type(obj)._forward_cls
        node.class_name = cls.__name__
        op = backward_node_op(cls)
        if op is not None:  # PyTorch's GeneratedBackwardFor_ns_name_default: called by the op's name
            node.class_name, node.name = op._qualname, f"{op._qualname} backward"
        if cls not in source_names:  # an op's save_for_backward call is in its setup_context
            source_names[cls] = save_for_backward_names(op._setup_context_fn if op is not None else cls)
        node.saved = _custom_saved(obj, source_names[cls], saved) + [
            saved.entry(t, label, "ctx_attribute") for label, t in ctx_attributes(obj)
        ]
        node.flags = _flags(obj, cls, ctx_calls)
    else:
        node.saved = _builtin_saved(obj, saved)
    return node


def _flags(obj: BackwardCFunction, cls: type, ctx_calls: dict) -> tuple[str, ...]:
    """The FLAGS of a custom node, in display order: from its class and from the watched ctx calls."""
    flags = set()
    if is_once_differentiable(cls):
        flags.add("once_differentiable")
    watched = ctx_calls.get(id(obj))
    if watched is not None and watched[0] is obj:
        flags |= watched[1]
    return tuple(f for f in FLAGS if f in flags)


def _custom_saved(obj, source_names, saved: _SavedEntries) -> list[SavedEntry]:
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
        saved.entry(t, name or f"saved_tensors[{k}]", "save_for_backward", error)
        for k, (name, t) in enumerate(zip(source_names, tensors))
        if isinstance(t, torch.Tensor)
    ]


_SAVED_FIELDS: dict[type, list[str]] = {}


def _builtin_saved(obj, saved: _SavedEntries) -> list[SavedEntry]:
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
        for label, t in tensors_in(name, value):
            entries.append(saved.entry(t, label, "builtin", error))
    return entries


def _raw_data(raw) -> torch.Tensor | None:
    """The tensor inside a raw SavedVariable, for when unpacking it normally raises."""
    data = getattr(raw, "data", None)
    return data if isinstance(data, torch.Tensor) else None
