"""The backward graph of one forward, as plain data: nodes, edges, saved tensors, one backward.

``gradviz.core.graph`` fills these from a live torch graph; the CLI prints them, the worker sends
their ``to_dict()`` and the app (which never imports torch) draws the dict with
``pyqtgraph.GraphItem.setData(pos=positions, adj=edges)``. ``from_dict`` reads that dict back, so
every front-end can hold the same objects. Standard library and NumPy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradviz.schema.strict_json import decode, encode, stored, stored_if_there

__all__ = [
    "FLAGS",
    "ROLES",
    "VALUE_LIMIT",
    "VIAS",
    "GradSummary",
    "GraphModel",
    "Node",
    "NodeFlow",
    "OutputInfo",
    "SavedEntry",
]

VIAS = ("save_for_backward", "ctx_attribute", "builtin")
ROLES = ("input", "output", "intermediate")
# Flags in display order. PyTorch reads ctx.dirty_tensors / ctx.non_differentiable and clears them
# as forward returns, and materialize_grads has no getter, so only extract_graph (which watches
# those three ctx calls during its own forward) can set the last three.
FLAGS = ("once_differentiable", "mark_dirty", "mark_non_differentiable", "materialize_grads_off")
VALUE_LIMIT = 64  # gradients with at most this many elements are kept whole


def _shape(value: Sequence[int] | None) -> tuple[int, ...] | None:
    return tuple(value) if value is not None else None


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

    def to_dict(self) -> dict[str, Any]:
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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SavedEntry:
        return cls(**{**d, "shape": tuple(d["shape"])})


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

    def to_dict(self) -> dict[str, Any]:
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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Node:
        """``saved_bytes`` is derived and a ``position`` belongs to the GraphModel: both are skipped."""
        return cls(
            **stored(d, "id", "name", "kind"),
            **stored_if_there(d, "input_index", "input_name"),
            class_name=d["class"],
            saved=[SavedEntry.from_dict(s) for s in d["saved"]],
            flags=tuple(d["flags"]),
            shape=_shape(d.get("shape")),
        )


@dataclass
class GradSummary:
    """One gradient seen by a backward hook; ``values`` only when it is small."""

    shape: tuple[int, ...]
    dtype: str
    norm: float
    values: np.ndarray | None = None  # float64 copy, shaped like the gradient

    def to_dict(self) -> dict[str, Any]:
        values = None
        if self.values is not None:
            values = [encode(v) for v in self.values.ravel().tolist()]
        return {"shape": list(self.shape), "dtype": self.dtype, "norm": encode(self.norm), "values": values}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GradSummary:
        """Non-finite numbers come back with their sign (null, from older versions: NaN)."""
        shape = tuple(d["shape"])
        values = None
        if d["values"] is not None:
            values = np.array([decode(v) for v in d["values"]], dtype=np.float64).reshape(shape)
        return cls(shape, d["dtype"], decode(d["norm"]), values)


def _summary(d: dict[str, Any] | None) -> GradSummary | None:
    return GradSummary.from_dict(d) if d is not None else None


@dataclass
class NodeFlow:
    """Gradients through one node during the recorded backward (PyTorch's hook naming).

    ``grad_outputs``: what flows in, one per forward output of the node (None: no gradient).
    ``grad_inputs``: what the node returns, one per ``next_functions`` slot.
    """

    step: int  # position in backward_order
    grad_outputs: list[GradSummary | None] = field(default_factory=list)
    grad_inputs: list[GradSummary | None] = field(default_factory=list)

    def to_dict(self, node: int) -> dict[str, Any]:
        return {
            "node": node,
            "step": self.step,
            "grad_outputs": [g.to_dict() if g else None for g in self.grad_outputs],
            "grad_inputs": [g.to_dict() if g else None for g in self.grad_inputs],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NodeFlow:
        """The flow alone; ``d["node"]`` says which node it belongs to."""
        return cls(
            d["step"], [_summary(g) for g in d["grad_outputs"]], [_summary(g) for g in d["grad_inputs"]]
        )


@dataclass
class OutputInfo:
    index: int
    shape: tuple[int, ...] | None  # None: not a tensor
    dtype: str | None
    differentiable: bool
    node: int | None  # the node its gradient enters, None when not differentiable

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "shape": list(self.shape) if self.shape is not None else None,
            "dtype": self.dtype,
            "differentiable": self.differentiable,
            "node": self.node,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OutputInfo:
        return cls(d["index"], _shape(d["shape"]), d["dtype"], d["differentiable"], d["node"])


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

    def to_dict(self) -> dict[str, Any]:
        """Strict JSON (no NaN): the CLI's ``graph`` schema plus positions, flows and outputs."""
        nodes = []
        for node in self.nodes:
            entry = node.to_dict()
            entry["position"] = [encode(v) for v in self.positions[node.id].tolist()]
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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GraphModel:
        """The model ``to_dict`` wrote; ``seconds`` is not in the dict and comes back empty."""
        positions = [[decode(v) for v in n["position"]] for n in d["nodes"]]
        return cls(
            nodes=[Node.from_dict(n) for n in d["nodes"]],
            edges=np.array(d["edges"], dtype=np.int64).reshape(-1, 2),
            edge_slots=np.array(d["edge_slots"], dtype=np.int64).reshape(-1),
            positions=np.array(positions, dtype=np.float64).reshape(-1, 2),
            backward_order=list(d["backward_order"]),
            flows={f["node"]: NodeFlow.from_dict(f) for f in d["flows"]},
            outputs=[OutputInfo.from_dict(o) for o in d["outputs"]],
            backward_error=d["backward_error"],
        )
