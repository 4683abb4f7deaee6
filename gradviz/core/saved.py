"""One accountant for what autograd keeps for backward: which storage a tensor lives in, and its bytes.

The graph (``gradviz.core.graph``) and the memory study (``gradviz.core.memory``) both count saved
tensors, each storage once; they share this module so they can never disagree about what "the same
storage" means or what it costs.

**The storage key.** A saved tensor keeps its whole storage alive, whatever part of it the tensor
views, so two tensors are charged once when they live in the same memory: the same device and the
same ``untyped_storage().data_ptr()``. That is the storage's base address, not
``tensor.data_ptr()``, which moves with the view's offset (``x[1:]`` and ``x`` share a key). The
storage's size is not part of the key: two storage objects over the same memory (``torch.from_numpy``
twice on one array) are one cost, charged at the larger size. Two exceptions, where an address says
nothing: a storage with ``data_ptr() == 0`` (every empty storage, and every storage on the meta
device) is only the same as itself, keyed by its StorageImpl; a tensor without a storage (sparse,
and other layouts whose ``untyped_storage`` raises) is only the same as itself, charged
``numel * element_size``.

An address is only unique while its storage lives, so a ``Storages`` holds every tensor it counted
until it is dropped: no storage can be freed and its address reused in the middle of a count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from torch.autograd.function import BackwardCFunction

__all__ = [
    "Storages",
    "ctx_attribute_tensors",
    "ctx_attributes",
    "dtype_name",
    "storage_bytes",
    "storage_key",
    "tensors_in",
]

StorageKey = tuple


def storage_key(t: torch.Tensor) -> StorageKey:
    """Equal keys: the same memory, charged once (see the module docstring for the rule)."""
    try:
        storage = t.untyped_storage()
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less tensors
        return ("tensor", id(t))
    address = storage.data_ptr()
    if address == 0:  # empty, or on the meta device: no memory to share
        return ("storage", storage._cdata)  # the StorageImpl's address: the same for all its views
    return (str(t.device), address)


def storage_bytes(t: torch.Tensor) -> int:
    """Bytes of the whole storage ``t`` lives in (a view keeps all of it alive)."""
    try:
        return t.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        return t.numel() * t.element_size()


def dtype_name(t: torch.Tensor) -> str:
    """``float64``, not ``torch.float64``."""
    return str(t.dtype).removeprefix("torch.")


class Storages:
    """The storages counted so far: one id (in order of first sight) and one byte count each."""

    def __init__(self) -> None:
        self._ids: dict[StorageKey, int] = {}
        self._bytes: list[int] = []
        self._held: list[torch.Tensor] = []  # keeps every counted address alive, see the module doc

    def add(self, t: torch.Tensor) -> int:
        """Count ``t``'s storage (once, however often it is added) and return its id."""
        self._held.append(t)
        storage_id = self._ids.setdefault(storage_key(t), len(self._ids))
        if storage_id == len(self._bytes):
            self._bytes.append(0)
        self._bytes[storage_id] = max(self._bytes[storage_id], storage_bytes(t))
        return storage_id

    def __contains__(self, t: torch.Tensor) -> bool:
        return storage_key(t) in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def bytes_of(self, storage_id: int) -> int:
        return self._bytes[storage_id]

    def total(self, storage_ids: Iterable[int] | None = None) -> int:
        """Bytes of the given storages (default: all), each once."""
        ids = range(len(self._bytes)) if storage_ids is None else set(storage_ids)
        return sum(self._bytes[i] for i in ids)


def tensors_in(name: str, value: object) -> Iterator[tuple[str, torch.Tensor]]:
    """A tensor, or the tensors in a list, tuple or dict (one level), with labels: ``name``,
    ``name[0]``, ``name['key']``."""
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


def ctx_attributes(node: object) -> list[tuple[str, torch.Tensor]]:
    """Tensors a custom Function keeps as ``ctx.name = tensor``, labelled; [] for any other node.

    A custom Function's graph node is its ctx, so these sit in the node's ``__dict__``. They never
    reach ``saved_tensors_hooks`` and bypass the version check, but backward keeps them alive.
    """
    if not isinstance(node, BackwardCFunction):
        return []
    return [item for name, value in vars(node).items() for item in tensors_in(name, value)]


def reachable_nodes(outputs: Iterable[torch.Tensor], stop: set[int]) -> list:
    """Every graph node reachable from ``outputs``, depth first along ``next_functions``, in the
    order the walk meets them; the walk does not enter the nodes whose ids are in ``stop`` (the
    inputs' own grad_fns: that history is not this forward's)."""
    todo = [t.grad_fn for t in outputs if t.grad_fn is not None]
    seen: dict[int, object] = {}  # holding the nodes keeps their ids from being reused mid-walk
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen or id(node) in stop:
            continue
        seen[id(node)] = node
        todo.extend(next_node for next_node, _ in node.next_functions)
    return list(seen.values())


def ctx_attribute_tensors(outputs: Iterable[torch.Tensor], stop: set[int]) -> list[torch.Tensor]:
    """The ctx-attribute tensors of every custom node reachable from ``outputs`` (``reachable_nodes``)."""
    return [t for node in reachable_nodes(outputs, stop) for _, t in ctx_attributes(node)]
