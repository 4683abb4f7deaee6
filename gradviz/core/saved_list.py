"""Every tensor one forward saves for backward: what it is, which node saved it, its bytes.

``saved_bytes`` runs one forward under ``torch.autograd.graph.saved_tensors_hooks`` and adds up
the storages the pack hook sees, each storage once (counted by ``gradviz.core.saved``, the same
accountant the graph uses). The pack hook hands autograd an index instead of the tensor, so
reading a node's saved attributes afterwards (``ConvolutionBackward0._saved_input``, a custom
Function's ``saved_tensors``) runs the unpack hook with that index: that is how each saved tensor
gets the node and attribute that hold it, from PyTorch itself rather than from a guess about the
graph. Tensors a custom Function keeps as ``ctx`` attributes (``ctx.sum = ...``) never reach the
pack hook; they are found on the forward's nodes and reported separately.

This list is why the fused conv-BN study saves less: unfused, every BatchNorm keeps its input
(the conv's output) and two statistics; fused, each layer keeps only its input and weight.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import torch
from torch.autograd.function import BackwardCFunction

from gradviz.core.custom_ops import backward_node_op
from gradviz.core.saved import Storages, ctx_attributes, dtype_name, reachable_nodes, storage_key, tensors_in
from gradviz.schema.errors import SettingsError
from gradviz.schema.memory import SavedBytes, SavedTensor

__all__ = ["measure_saved", "saved_bytes"]


def saved_bytes(fn_or_callable: Callable | type[torch.autograd.Function], inputs) -> SavedBytes:
    """Bytes saved for backward when ``fn_or_callable(*inputs)`` runs once.

    A ``torch.autograd.Function`` subclass is called through ``.apply``; anything else is called
    as is (an ``nn.Module``, a lambda). ``inputs`` is a tuple of arguments (a lone tensor is fine).
    """
    return measure_saved(fn_or_callable, inputs)[0]


def measure_saved(
    fn_or_callable, inputs, names: dict[str, torch.Tensor] | None = None
) -> tuple[SavedBytes, object]:
    """saved_bytes, and the forward's output so the caller can run backward on it.

    Each saved tensor is also told apart (see ``_attribute``): which graph node saved it and
    under which attribute, and what it is. ``names`` labels tensors the caller knows (the input,
    the weights): a saved tensor in one of their storages takes that label.
    """
    fn = _as_callable(fn_or_callable)
    args = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    packed: list[torch.Tensor] = []
    producers: list[object] = []  # the node that made each saved tensor (None: a leaf, or not yet set)
    unpacked: list[int] = []  # which packed tensors the last attribute read asked for

    def pack(t: torch.Tensor) -> int:
        # Keep a reference so no saved storage is freed (and its address reused) mid-forward;
        # detach so the hook holds no graph and makes no reference cycle through grad_fn.
        # Autograd keeps the index; reading a node's saved attribute unpacks it, which tells
        # which packed tensor that attribute is.
        producers.append(t.grad_fn)
        packed.append(t.detach())
        return len(packed) - 1

    def unpack(index: int) -> torch.Tensor:
        unpacked.append(index)
        return packed[index]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        output = fn(*args)

    storages = Storages()
    ids = [storages.add(t) for t in packed]
    outputs = [t for _, t in tensors_in("output", output)]
    stop = {id(a.grad_fn) for a in args if isinstance(a, torch.Tensor) and a.grad_fn is not None}
    nodes = sorted(reachable_nodes(outputs, stop), key=lambda node: node._sequence_nr())  # forward order
    numbers = _node_numbers(nodes)
    made = _forward_numbers(nodes)
    savers = _savers(nodes, unpacked)
    labels = _Labels(
        names or {}, {f"argument {k}": a for k, a in enumerate(args) if isinstance(a, torch.Tensor)}
    )

    tensors, counted = [], set()
    for index, (t, i) in enumerate(zip(packed, ids)):
        node, attribute = savers.get(index, (None, ""))
        op, number = (node.name(), numbers[id(node)]) if node is not None else ("", 0)
        name = labels.name(t) or _made_by(producers[index], node, attribute, made)
        tensors.append(
            SavedTensor(
                tuple(t.shape),
                dtype_name(t),
                storages.bytes_of(i),
                i in counted,
                name,
                op,
                number,
                attribute,
                i,
            )
        )
        counted.add(i)
    producers.clear()

    ctx_tensors = []
    for node in nodes:
        for attribute, t in ctx_attributes(node):
            if t in storages:  # already counted (saved, or an earlier ctx attribute)
                continue
            i = storages.add(t)
            name = labels.name(t) or f"{attribute} (kept on ctx)"
            ctx_tensors.append(
                SavedTensor(
                    tuple(t.shape), dtype_name(t), storages.bytes_of(i), False, name, node.name(),
                    numbers[id(node)], f"ctx.{attribute}", i,
                )
            )  # fmt: skip
    result = SavedBytes(
        saved_bytes=storages.total(ids),
        count=len(set(ids)),
        tensors=tensors,
        ctx_attribute_bytes=sum(t.bytes for t in ctx_tensors),
        ctx_tensors=ctx_tensors,
    )
    return result, output


def _node_numbers(nodes: list) -> dict[int, int]:
    """id(node) -> 1 for the first ConvolutionBackward0 of the forward, 2 for the second, ..."""
    count: dict[str, int] = {}
    numbers = {}
    for node in nodes:
        count[node.name()] = count.get(node.name(), 0) + 1
        numbers[id(node)] = count[node.name()]
    return numbers


def _savers(nodes: list, unpacked: list[int]) -> dict[int, tuple[object, str]]:
    """packed index -> (node, attribute) for every saved tensor a node's attributes reach.

    Built-in nodes expose what they saved as ``_saved_<name>`` (``ConvolutionBackward0._saved_input``),
    a custom Function as ``saved_tensors``; reading one runs the unpack hook, which records the
    packed indices it returns. An attribute holding several tensors is labelled ``name[k]``.
    """
    found: dict[int, tuple[object, str]] = {}
    for node in nodes:
        if isinstance(node, BackwardCFunction):
            attributes = ["saved_tensors"]
        else:
            attributes = [a for a in dir(node) if a.startswith("_saved_")]
        for attribute in attributes:
            unpacked.clear()
            try:
                value = getattr(node, attribute)
            except (RuntimeError, TypeError, AttributeError):  # freed, or not readable: leave it unnamed
                continue
            label = attribute.removeprefix("_saved_")
            several = not isinstance(value, torch.Tensor)
            for k, index in enumerate(unpacked):
                found.setdefault(index, (node, f"{label}[{k}]" if several else label))
    unpacked.clear()
    return found


class _Labels:
    """Names for tensors the caller knows, matched by storage: the same storage and shape is the
    tensor itself, another shape a view of it."""

    def __init__(self, *named: dict[str, torch.Tensor]) -> None:
        self._by_key: dict[tuple, list[tuple[tuple[int, ...], str]]] = {}
        for mapping in named:
            for label, t in mapping.items():
                self._by_key.setdefault(storage_key(t), []).append((tuple(t.shape), label))

    def name(self, t: torch.Tensor) -> str:
        known = self._by_key.get(storage_key(t))
        if not known:
            return ""
        same = [label for shape, label in known if shape == tuple(t.shape)]
        return same[0] if same else f"view of {known[0][1]}"


# torch's names for the outputs some nodes save of themselves (derivatives.yaml calls them result1...)
RESULT_NAMES = {
    ("NativeBatchNormBackward0", "result1"): "batch mean",
    ("NativeBatchNormBackward0", "result2"): "batch 1/std",
}


def _made_by(producer, saver, attribute: str, made: dict[int, tuple[str, int]]) -> str:
    """What a saved tensor is, from the forward op that made it: ``output of convolution #2``.

    The node that saved it is its own column (``SavedTensor.saved_by``); naming the tensor by
    that node's neighbour (``output of ConvolutionBackward0``) read as if backward had made it."""
    if producer is not None and id(producer) in made:
        op, number = made[id(producer)]
        return f"output of {op} #{number}"
    if saver is not None and attribute.startswith("result"):  # an output the saving node made itself
        return RESULT_NAMES.get((saver.name(), attribute), f"its own output ({attribute})")
    if producer is not None:
        return f"output of {forward_op(producer)} (before this forward)"
    return "a tensor made without autograd history"


_BACKWARD = re.compile(r"Backward\d*$")
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def forward_op(node) -> str:
    """The forward op a graph node is the backward of: a custom Function's class name
    (``LinearFunction``), a custom op's ``ns::name``, else PyTorch's node name without its
    ``Backward<n>`` suffix in ATen's snake case (``ConvolutionBackward0`` -> ``convolution``,
    ``NativeBatchNormBackward0`` -> ``native_batch_norm``: derivatives.yaml names each node after
    its op so)."""
    if isinstance(node, BackwardCFunction):
        cls = type(node)._forward_cls
        op = backward_node_op(cls)
        return op._qualname if op is not None else cls.__name__
    name = node.name().removeprefix("torch::autograd::")
    stem = _BACKWARD.sub("", name)
    if not stem or stem == name:  # not a <Op>Backward<n> node (AccumulateGrad, CopySlices): as PyTorch says
        return name
    return _WORD_START.sub("_", stem).lower()


def _forward_numbers(nodes: list) -> dict[int, tuple[str, int]]:
    """id(node) -> (its forward op, 1 for the forward's first call of that op, 2 for the second...)."""
    count: dict[str, int] = {}
    numbers = {}
    for node in nodes:
        op = forward_op(node)
        count[op] = count.get(op, 0) + 1
        numbers[id(node)] = (op, count[op])
    return numbers


def _as_callable(fn_or_callable) -> Callable:
    if isinstance(fn_or_callable, type) and issubclass(fn_or_callable, torch.autograd.Function):
        return fn_or_callable.apply
    if not callable(fn_or_callable):
        raise SettingsError(f"saved_bytes needs a Function subclass or a callable, got {fn_or_callable!r}.")
    return fn_or_callable
