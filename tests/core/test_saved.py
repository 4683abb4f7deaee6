"""The saved-tensor accountant against PyTorch: what saved_tensors_hooks sees, and a ctx's __dict__."""

from __future__ import annotations

import numpy as np
import torch
from torch.autograd import Function

from gradviz.core.graph import graph_from_outputs
from gradviz.core.memory import saved_bytes
from gradviz.core.saved import Storages, ctx_attribute_tensors, ctx_attributes, storage_key


def packed_by(forward, *args) -> tuple[list[torch.Tensor], object]:
    """Every tensor the pack hook sees while ``forward(*args)`` runs, and forward's output."""
    packed: list[torch.Tensor] = []

    def pack(t):
        packed.append(t)  # the reference keeps each storage, and its address, alive
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward(*args)
    return packed, out


def oracle(packed: list[torch.Tensor]) -> tuple[int, int]:
    """(storages, bytes): one entry per device and storage base address, sized by PyTorch."""
    storages = {(t.device, t.untyped_storage().data_ptr()): t.untyped_storage().nbytes() for t in packed}
    return len(storages), sum(storages.values())


def count(packed: list[torch.Tensor]) -> tuple[int, int]:
    storages = Storages()
    ids = [storages.add(t) for t in packed]
    return len(set(ids)), storages.total(ids)


def test_a_view_saved_twice_counts_once_with_its_whole_storage():
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    packed, _ = packed_by(lambda x: (v := x[1:]) * v, x)
    assert len(packed) == 2 and packed[0] is packed[1]
    assert packed[0].data_ptr() != x.data_ptr()  # the view starts at an offset into x's storage
    assert count(packed) == oracle(packed) == (1, x.untyped_storage().nbytes())
    assert storage_key(packed[0]) == storage_key(x)


def test_two_views_of_one_storage_count_once():
    x = torch.randn(8, dtype=torch.float64, requires_grad=True)
    packed, _ = packed_by(lambda x: x[:4] * x[4:], x)
    assert len(packed) == 2 and packed[0] is not packed[1]
    assert count(packed) == oracle(packed) == (1, x.untyped_storage().nbytes())


def test_two_storages_count_twice():
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, requires_grad=True)
    packed, _ = packed_by(lambda a, b: torch.outer(a.double(), b), a, b)
    assert oracle(packed)[0] == 2
    assert count(packed) == oracle(packed)


def test_adding_the_same_tensor_again_changes_nothing():
    x = torch.randn(5, 2)
    storages = Storages()
    first = storages.add(x)
    assert storages.add(x) == storages.add(x.t()) == first
    assert len(storages) == 1 and storages.total() == x.untyped_storage().nbytes()
    assert storages.bytes_of(first) == x.untyped_storage().nbytes()


def test_empty_storages_are_never_merged():
    a, b = torch.empty(0), torch.empty(0, 3)
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() == 0  # no address to go by
    assert storage_key(a) != storage_key(b)
    assert storage_key(a) == storage_key(a[0:0])  # but a view of one is the same storage
    storages = Storages()
    assert storages.add(a) != storages.add(b)
    assert storages.total() == a.untyped_storage().nbytes() + b.untyped_storage().nbytes() == 0


def test_one_address_is_one_cost_at_the_larger_size():
    array = np.zeros(10)
    whole, head = torch.from_numpy(array), torch.from_numpy(array[:3])  # two storage objects, one memory
    assert storage_key(whole) == storage_key(head)
    storages = Storages()
    assert storages.add(head) == storages.add(whole)
    assert storages.total() == max(whole.untyped_storage().nbytes(), head.untyped_storage().nbytes())


class KeepsCtx(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = x.detach() * 2
        ctx.pair = (x.detach() + 1, "not a tensor")
        ctx.by_name = {"shift": x.detach() - 1}
        ctx.count = 3
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_ctx_attributes_are_found_and_never_reach_the_pack_hook():
    x = torch.randn(4, requires_grad=True)
    packed, out = packed_by(KeepsCtx.apply, x)
    assert packed == []
    node = out.grad_fn  # a custom Function's node is its ctx
    found = ctx_attributes(node)
    assert [label for label, _ in found] == ["scale", "pair[0]", "by_name['shift']"]
    assert all(a is b for (_, a), b in zip(found, [node.scale, node.pair[0], node.by_name["shift"]]))
    assert ctx_attributes(out.sum().grad_fn) == []  # a built-in node has no ctx attributes
    reached = ctx_attribute_tensors([(out * 3).sum()], stop=set())
    assert len(reached) == 3 and all(any(t is s for _, s in found) for t in reached)


def test_the_graph_and_the_memory_study_count_alike():
    fused = _fused_function()
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    packed, out = packed_by(lambda x, w: fused.apply(fused.apply(x, w), w[:, :1].expand(4, 4, 3, 3)), x, w)
    measured = saved_bytes(lambda x, w: fused.apply(fused.apply(x, w), w[:, :1].expand(4, 4, 3, 3)), (x, w))
    graph = graph_from_outputs(out, (x, w), ["x", "w"])
    hooked = graph.saved_bytes(("save_for_backward", "builtin"))
    assert measured.saved_bytes == hooked == oracle(packed)[1]
    assert measured.ctx_attribute_bytes == graph.saved_bytes(("ctx_attribute",)) > 0


def _fused_function():
    from gradviz.core.loader import load_file
    from gradviz.schema.library import find_builtin

    return load_file(find_builtin("fused_conv_bn")).functions["FusedConvBN2DFunction"]
