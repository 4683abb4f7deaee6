"""Which tensors each variant saves, and which node saved them, with PyTorch as the oracle.

Each test runs the forward itself under ``saved_tensors_hooks`` (what the pack hook sees) or reads
the graph nodes' ``_saved_*`` attributes directly (no hooks at all), and compares that with the
list ``gradviz.core`` reports.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from torch import nn
from torch.autograd.function import BackwardCFunction

from gradviz.core.memory import EPS, conv_bn_study, fused_function, saved_bytes
from gradviz.schema.memory import ConvBNStudy, SavedTensor


def hook_view(fn, *args) -> list[tuple[tuple[int, ...], str, int, int]]:
    """(shape, dtype, storage address, storage bytes) of every tensor the pack hook sees, in order."""
    seen, held = [], []

    def pack(t):
        held.append(t)  # keep every storage alive, so no address is reused mid-forward
        s = t.untyped_storage()
        seen.append((tuple(t.shape), str(t.dtype).removeprefix("torch."), s.data_ptr(), s.nbytes()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return seen


def node_view(output: torch.Tensor, stop=()) -> Counter:
    """(node name, its number among nodes of that name in forward order, attribute, shape) of every
    tensor the graph's nodes hold in ``_saved_*`` (built-in) or ``saved_tensors`` (custom): no hooks."""
    nodes, todo, stop_ids = {}, [output.grad_fn], {id(n) for n in stop}
    while todo:
        node = todo.pop()
        if node is None or id(node) in nodes or id(node) in stop_ids:
            continue
        nodes[id(node)] = node
        todo += [n for n, _ in node.next_functions]
    found, count = Counter(), Counter()
    for node in sorted(nodes.values(), key=lambda n: n._sequence_nr()):
        count[node.name()] += 1
        if isinstance(node, BackwardCFunction):
            items = [(f"saved_tensors[{k}]", t) for k, t in enumerate(node.saved_tensors)]
        else:
            items = []
            for attr in (a for a in dir(node) if a.startswith("_saved_")):
                value = getattr(node, attr)
                if isinstance(value, torch.Tensor):
                    items.append((attr.removeprefix("_saved_"), value))
                elif isinstance(value, tuple | list):
                    items += [(f"{attr.removeprefix('_saved_')}[{k}]", v) for k, v in enumerate(value)]
        for attr, t in items:
            if isinstance(t, torch.Tensor):
                found[(node.name(), count[node.name()], attr, tuple(t.shape))] += 1
    return found


def aten_ops(fn, *args) -> list[str]:
    """The ATen ops ``fn(*args)`` runs, in order, as the dispatcher sees them (``convolution``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func._schema.name.removeprefix("aten::"))
            return func(*args, **(kwargs or {}))

    with Record():
        fn(*args)
    return seen


def reported(tensors: list[SavedTensor]) -> Counter:
    return Counter((t.op, t.op_number, t.attribute, t.shape) for t in tensors)


def check_against_hooks(got, seen) -> None:
    """The list is the pack hook's, in order; each storage is charged once; the bytes add up."""
    assert [(t.shape, t.dtype) for t in got.tensors] == [(shape, dtype) for shape, dtype, _, _ in seen]
    first = {}
    for t, (_, _, address, nbytes) in zip(got.tensors, seen):
        assert t.bytes == nbytes
        assert t.shared == (address in first)
        assert t.storage == first.setdefault(address, t.storage)
    assert sum(t.bytes for t in got.tensors if not t.shared) == got.saved_bytes
    assert got.saved_bytes == sum(dict((a, n) for _, _, a, n in seen).values())
    assert got.count == len(first)


def conv_bn(in_ch: int, out_ch: int, layers: int, dtype=torch.float32) -> nn.Sequential:
    """The study's unfused stack, built here from nn modules."""
    modules = []
    for k in range(layers):
        modules += [
            nn.Conv2d(in_ch if k == 0 else out_ch, out_ch, 3, bias=False, dtype=dtype),
            nn.BatchNorm2d(out_ch, eps=EPS, affine=False, track_running_stats=False, dtype=dtype),
        ]
    return nn.Sequential(*modules)


def fused_stack(weights):
    fn = fused_function()

    def forward(x):
        for w in weights:
            x = fn.apply(x, w, EPS)
        return x

    return forward


def test_real_conv2d_batchnorm2d_tensors_are_what_the_hooks_and_the_nodes_see():
    torch.manual_seed(0)
    stack = conv_bn(3, 4, layers=2)
    x = torch.randn(2, 3, 10, 10, requires_grad=True)
    got = saved_bytes(stack, (x,))
    check_against_hooks(got, hook_view(stack, x))
    assert reported(got.tensors) == node_view(stack(x))
    conv1 = next(t for t in got.tensors if t.op == "ConvolutionBackward0" and t.op_number == 1)
    assert (conv1.attribute, conv1.name, conv1.shape) == ("input", "argument 0", tuple(x.shape))
    # batch norm 1 keeps conv 1's output: that is what fusing saves
    bn_input = next(t for t in got.tensors if t.op == "NativeBatchNormBackward0" and t.attribute == "input")
    # named by the forward op that made it (ATen's, as a dispatch mode sees the forward run), and the
    # node that saved it said apart: "output of convolution #1", saved by "NativeBatchNormBackward0 #1"
    assert aten_ops(stack, x)[0] == "convolution"
    assert bn_input.name == "output of convolution #1"
    assert bn_input.saved_by == "NativeBatchNormBackward0 #1 · input"


def test_fused_function_tensors_are_what_the_hooks_and_the_nodes_see():
    torch.manual_seed(0)
    weights = [torch.randn(4, 3, 3, 3, requires_grad=True), torch.randn(4, 4, 3, 3, requires_grad=True)]
    forward = fused_stack(weights)
    x = torch.randn(2, 3, 10, 10, requires_grad=True)
    got = saved_bytes(forward, (x,))
    check_against_hooks(got, hook_view(forward, x))
    out = forward(x)
    assert reported(got.tensors) == node_view(out)
    assert {t.attribute for t in got.tensors} == {"saved_tensors[0]", "saved_tensors[1]"}
    # ctx attributes: the nodes' own tensors, named by attribute, outside saved_bytes
    nodes = [out.grad_fn, out.grad_fn.next_functions[0][0]][::-1]
    expected = Counter(
        (n.name(), k, f"ctx.{a}", tuple(getattr(n, a).shape))
        for k, n in enumerate(nodes, 1)
        for a in ("sum", "sqrt_var")
    )
    assert reported(got.ctx_tensors) == expected
    assert sum(t.bytes for t in got.ctx_tensors) == got.ctx_attribute_bytes


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_studys_lists_add_up_to_its_totals_and_match_the_hooks(dtype):
    shape, out_ch, layers = (3, 2, 12, 12), 5, 3
    study = conv_bn_study(layers, shape, out_ch, 3, dtype=dtype)
    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g, dtype=dt, requires_grad=True)
    weights = [
        torch.randn(out_ch, shape[1] if k == 0 else out_ch, 3, 3, generator=g, dtype=dt, requires_grad=True)
        for k in range(layers)
    ]
    stack = conv_bn(shape[1], out_ch, layers, dt)
    for variant, forward in ((study.unfused, stack), (study.fused, fused_stack(weights))):
        check_against_hooks(variant.saved, hook_view(forward, x))
        assert reported(variant.saved.tensors) == node_view(forward(x))
        assert all(t.name and t.op and t.attribute for t in variant.saved.tensors)
    # the why: what only the unfused stack keeps is each batch norm's input and statistics
    by_bn = sum(t.bytes for t in study.unfused.saved.tensors if t.op == "NativeBatchNormBackward0")
    assert by_bn == study.saved_difference_bytes == study.formula_bytes
    names = [t.name for t in study.unfused.saved.tensors]
    assert names[:2] == ["x (the input)", "conv 1 weight"]
    assert [f"output of convolution #{k}" in names for k in (1, 2, 3)] == [True] * 3
    assert not any("Backward" in name for name in names)  # a forward tensor is never named by a backward node


def test_tensors_that_share_a_storage_are_charged_once_and_say_so():
    x = torch.randn(6, 5, requires_grad=True)

    def fn(x):
        y = x.exp()  # ExpBackward0 saves its result y
        return y[1:].sin()  # SinBackward0 saves the view y[1:]: y's storage again

    got = saved_bytes(fn, (x,))
    check_against_hooks(got, hook_view(fn, x))
    assert [t.shared for t in got.tensors] == [False, True]
    assert got.tensors[0].storage == got.tensors[1].storage
    assert got.saved_bytes == got.tensors[0].bytes == x.numel() * x.element_size()
    assert {(t.op, t.attribute) for t in got.tensors} == {
        ("ExpBackward0", "result"),
        ("SinBackward0", "self"),
    }
    assert "slice" in aten_ops(fn, x)
    assert got.tensors[1].name == "output of slice #1"


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def test_a_tensor_a_users_function_made_is_named_by_that_function():
    x = torch.randn(5, requires_grad=True)

    def fn(x):
        return Twice.apply(x).sin()  # SinBackward0 saves Twice's output

    got = saved_bytes(fn, (x,))
    (saved,) = got.tensors
    made_by = fn(x).grad_fn.next_functions[0][0]
    assert type(made_by)._forward_cls is Twice
    assert saved.name == f"output of {Twice.__name__} #1"
    assert saved.saved_by == "SinBackward0 #1 · self"


def test_a_tensor_a_custom_op_made_is_named_by_the_op():
    from tests.core.audit_models import matmul

    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True)
    got = saved_bytes(lambda a, b: matmul(a, b).sin(), (a, b))  # SinBackward0 saves the op's output
    made = [t for t in got.tensors if t.op == "SinBackward0"]
    assert [t.name for t in made] == [f"output of {matmul._qualname} #1"]  # "gvaudit::matmul #1"


def test_the_named_list_travels_through_the_schema_as_strict_json():
    study = conv_bn_study(2, (2, 3, 10, 10), 4, 3)
    d = json.loads(json.dumps(study.to_dict(), allow_nan=False))
    back = ConvBNStudy.from_dict(d)
    assert back.unfused.saved.tensors == study.unfused.saved.tensors
    assert back.fused.saved.ctx_tensors == study.fused.saved.ctx_tensors
    old = {"shape": [2, 3], "dtype": "float32", "bytes": 24, "shared": False}  # written before names
    assert SavedTensor.from_dict(old) == SavedTensor((2, 3), "float32", 24, False)
    assert SavedTensor.from_dict(old).saved_by == ""
