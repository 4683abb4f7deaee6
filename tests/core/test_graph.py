"""The backward-graph model against PyTorch itself: grad_fn walks, saved_tensors_hooks, plain backward."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch
from torch import nn
from torch.autograd import Function
from torch.autograd.function import once_differentiable

from gradviz.core.graph import extract_graph, graph_from_outputs, make_grad_outputs
from gradviz.core.loader import choose_function, load_file
from gradviz.schema.graph import GraphModel
from gradviz.schema.library import builtin_functions

CPU = torch.device("cpu")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
ALL_VALUES = 1_000_000  # keep every gradient whole, to compare it with PyTorch's
ENTRIES = builtin_functions()
BUILTIN_PARAMS = [pytest.param(e, id=e.name) for e in ENTRIES] or [
    pytest.param(None, marks=pytest.mark.skip(reason="resources/functions is empty"))
]


# --------------------------------------------------------------------------- oracles


def name_of(node) -> str:
    return node.name().removeprefix("torch::autograd::")


def oracle_walk(outputs) -> list:
    """Every node reachable from the outputs, found by following grad_fn and next_functions."""
    found, todo = [], [o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or any(node is f for f in found):
            continue
        found.append(node)
        todo.extend(n for n, _ in node.next_functions)
    return found


def oracle_edges(outputs) -> Counter:
    return Counter(
        (name_of(node), name_of(nxt), k)
        for node in oracle_walk(outputs)
        for k, (nxt, _) in enumerate(node.next_functions)
        if nxt is not None
    )


def model_edges(model: GraphModel) -> Counter:
    return Counter(
        (model.nodes[a].name, model.nodes[b].name, int(k))
        for (a, b), k in zip(model.edges.tolist(), model.edge_slots.tolist())
    )


class PackRecorder:
    """What save_for_backward and built-in ops save, seen by saved_tensors_hooks' pack hook."""

    def __init__(self) -> None:
        self.packed: list[torch.Tensor] = []  # references keep storages (and their addresses) alive

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)

    def _pack(self, t):
        self.packed.append(t)
        return t

    def entries(self) -> Counter:
        return Counter(
            (tuple(t.shape), str(t.dtype).removeprefix("torch."), t.untyped_storage().nbytes())
            for t in self.packed
        )

    def unique(self) -> tuple[int, int]:
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in self.packed}
        return len(storages), sum(storages.values())


HOOKED = ("save_for_backward", "builtin")


def model_hooked_entries(model: GraphModel) -> Counter:
    return Counter((s.shape, s.dtype, s.bytes) for n in model.nodes for s in n.saved if s.via in HOOKED)


def model_hooked_unique(model: GraphModel) -> tuple[int, int]:
    ids = {s.storage_id for n in model.nodes for s in n.saved if s.via in HOOKED}
    return len(ids), model.saved_bytes(HOOKED)


def assert_matches_hooks(model: GraphModel, recorder: PackRecorder) -> None:
    assert model_hooked_entries(model) == recorder.entries()
    assert model_hooked_unique(model) == recorder.unique()


def leaf_grads(model: GraphModel) -> dict[int, np.ndarray]:
    """Gradient that flowed into each input's AccumulateGrad, by input index."""
    return {
        n.input_index: model.flows[n.id].grad_outputs[0].values
        for n in model.nodes
        if n.kind == "leaf" and n.input_index is not None
    }


def assert_layered(model: GraphModel) -> None:
    y = model.positions[:, 1]
    for a, b in model.edges.tolist():
        assert y[a] > y[b], f"edge {a} -> {b} does not go down"
    leaves = [n.id for n in model.nodes if n.kind == "leaf"]
    if leaves:
        assert np.all(y[leaves] == y.min())


def assert_runs_after_parents(model: GraphModel) -> None:
    step = {node: k for k, node in enumerate(model.backward_order)}
    for a, b in model.edges.tolist():
        if a in step and b in step:
            assert step[a] < step[b], f"node {b} ran before node {a}, which sends it a gradient"


def fresh(args):
    return tuple(
        a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args
    )


# --------------------------------------------------------------------------- the built-in library


def load_example(entry, dtype=torch.float64):
    loaded = load_file(entry.path)
    fn = choose_function(loaded)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        args = loaded.example_inputs(CPU, dtype)
    return fn, args


@pytest.mark.parametrize("entry", BUILTIN_PARAMS)
def test_builtin_example_against_pytorch(entry):
    fn, args = load_example(entry)
    with PackRecorder() as recorder:
        model = extract_graph(fn, args, value_limit=ALL_VALUES)
    assert model.backward_error is None
    assert_matches_hooks(model, recorder)

    # Structure: the same nodes and edges as a plain call on fresh leaves (none of these modify inputs).
    plain_args = fresh(args)
    outputs = fn.apply(*plain_args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    assert model_edges(model) == oracle_edges(outputs)
    real = oracle_walk(outputs)
    assert Counter(n.name for n in model.nodes) == Counter(name_of(n) for n in real)

    # ctx attributes are exactly the node's __dict__ tensors, which the pack hook never saw.
    custom = [n for n in real if isinstance(n, torch.autograd.function.BackwardCFunction)]
    expected_ctx = {k for n in custom for k, v in vars(n).items() if isinstance(v, torch.Tensor)}
    got_ctx = {s.name for n in model.nodes for s in n.saved if s.via == "ctx_attribute"}
    assert got_ctx == expected_ctx

    # Backward: the root first, every node after the ones feeding it, leaves last (one custom node).
    root = model.outputs[0].node
    assert model.backward_order[0] == root
    assert_runs_after_parents(model)
    kinds = [model.nodes[i].kind for i in model.backward_order]
    assert kinds == sorted(kinds, key=lambda k: k == "leaf")
    grads = make_grad_outputs(outputs)
    leaves = [a for a in plain_args if isinstance(a, torch.Tensor) and a.requires_grad]
    expected = torch.autograd.grad(
        [o for o, g in zip(outputs, grads) if g is not None], leaves, [g for g in grads if g is not None]
    )
    got = leaf_grads(model)
    indices = [j for j, a in enumerate(plain_args) if isinstance(a, torch.Tensor) and a.requires_grad]
    for j, g in zip(indices, expected):
        np.testing.assert_allclose(got[j], g.numpy(), rtol=1e-12, atol=1e-12)

    assert_layered(model)
    json.dumps(model.to_dict(), allow_nan=False)


@pytest.mark.parametrize("entry", BUILTIN_PARAMS)
def test_builtin_example_is_deterministic(entry):
    fn, args = load_example(entry)
    first, second = extract_graph(fn, args), extract_graph(fn, args)
    np.testing.assert_array_equal(first.positions, second.positions)
    assert first.to_dict() == second.to_dict()


def test_library_examples_carry_their_flags():
    names = {e.name for e in ENTRIES}
    if not {"mul_constant_lazy_grads", "fused_conv_bn", "linear"} <= names:
        pytest.skip("the library is still being written")
    by_name = {e.name: e for e in ENTRIES}
    lazy = extract_graph(*load_example(by_name["mul_constant_lazy_grads"]))
    assert lazy.nodes[0].flags == ("materialize_grads_off",)
    plain = extract_graph(*load_example(by_name["linear"]))
    assert plain.nodes[0].flags == ()
    assert [s.name for s in plain.nodes[0].saved] == ["input", "weight"]
    fused = extract_graph(*load_example(by_name["fused_conv_bn"]))
    node = fused.nodes[0]
    assert node.class_name == "FusedConvBN2DFunction" and node.name == "FusedConvBN2DFunctionBackward"
    assert [(s.name, s.via, s.role) for s in node.saved] == [
        ("X", "save_for_backward", "input"),
        ("conv_weight", "save_for_backward", "input"),
        ("sum", "ctx_attribute", "intermediate"),
        ("sqrt_var", "ctx_attribute", "intermediate"),
    ]


# --------------------------------------------------------------------------- tricky Functions


class SaveViewToo(Function):
    """Saves x and a view of x: one storage."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, x.view(-1))
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class TwoOutputs(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w, (x + w).sum()

    @staticmethod
    def backward(ctx, g1, g2):
        x, w = ctx.saved_tensors
        return g1 * w + g2, g1 * x + g2


class WithNonDifferentiable(Function):
    """A float output marked non-differentiable and an integer one."""

    @staticmethod
    def forward(ctx, x):
        flag = (x > 0).to(x.dtype)
        index = x.argmax().reshape(1)
        ctx.mark_non_differentiable(flag)
        return x * 3, flag, index

    @staticmethod
    def backward(ctx, g, _gf, _gi):
        return g * 3


class SaveInput(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class SaveOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class OnceDifferentiable(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class LazyGrads(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        total = None
        for g, c in ((g1, 2), (g2, 3)):
            if g is not None:
                total = g * c if total is None else total + g * c
        return total


class InPlaceDouble(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


class CtxAttribute(Function):
    """Keeps a tensor as a ctx attribute, like the fused conv-BN does."""

    @staticmethod
    def forward(ctx, x):
        ctx.scale = x.abs() + 1
        ctx.pair = (x * 2, 3)
        return x * ctx.scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale  # (wrong on purpose for x near 0; only the graph matters here)


class WrongCount(Function):
    @staticmethod
    def forward(ctx, x, w):
        return x * w

    @staticmethod
    def backward(ctx, g):
        return (g,)


def leaf(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()


def test_saved_view_shares_storage_with_the_input():
    x = leaf(3, 4)
    with PackRecorder() as recorder:
        model = extract_graph(SaveViewToo, (x,))
    assert_matches_hooks(model, recorder)
    saved = model.nodes[0].saved
    assert [(s.name, s.shape, s.role, s.input_index) for s in saved] == [
        ("x", (3, 4), "input", 0),
        ("saved_tensors[1]", (12,), "input", 0),
    ]
    assert saved[0].storage_id == saved[1].storage_id and saved[0].shared and saved[1].shared
    assert model.saved_bytes_unique == model.nodes[0].saved_bytes == x.untyped_storage().nbytes()


def test_builtin_view_of_an_input_is_counted_with_the_input():
    x, w = leaf(5, 3), leaf(4, 3, seed=1)
    with PackRecorder() as recorder:
        y = (x[1:] * w).sum()
    model = graph_from_outputs(y, (x, w), ["x", "w"])
    assert_matches_hooks(model, recorder)
    mul = next(n for n in model.nodes if n.name == "MulBackward0")
    assert {(s.name, s.role, s.input_index) for s in mul.saved} == {
        ("self", "input", 0),
        ("other", "input", 1),
    }
    assert model.saved_bytes_unique == x.untyped_storage().nbytes() + w.untyped_storage().nbytes()


def test_saved_tensor_that_is_also_an_input_is_counted_once():
    x = leaf(6)
    with PackRecorder() as recorder:
        y = x.sin() * x  # SinBackward0 saves x, MulBackward0 saves x again and sin(x)
    model = graph_from_outputs(y, (x,), ["x"])
    assert_matches_hooks(model, recorder)
    entries = [s for n in model.nodes for s in n.saved]
    from_x = [s for s in entries if s.role == "input"]
    assert len(from_x) == 2 and len({s.storage_id for s in from_x}) == 1
    assert all(s.input_index == 0 and s.shared for s in from_x)
    assert model.saved_bytes_unique == 2 * x.untyped_storage().nbytes()  # x and sin(x)


def test_two_custom_nodes_each_list_their_own_saved_tensors():
    x = leaf(4)
    with PackRecorder() as recorder:
        h = SaveInput.apply(x)
        y = SaveOutput.apply(h)
    model = graph_from_outputs(y, (x,), ["x"])
    assert_matches_hooks(model, recorder)
    by_class = {n.class_name: n for n in model.nodes if n.kind == "custom"}
    assert set(by_class) == {"SaveInput", "SaveOutput"}
    real = {type(n)._forward_cls.__name__: n for n in oracle_walk([y]) if hasattr(type(n), "_forward_cls")}
    for name, node in by_class.items():
        (expected,) = real[name].saved_tensors
        assert [(s.name, s.shape, s.bytes) for s in node.saved] == [
            (node.saved[0].name, tuple(expected.shape), expected.untyped_storage().nbytes())
        ]
    assert by_class["SaveInput"].saved[0].role == "input"
    assert by_class["SaveOutput"].saved[0].role == "output"
    assert by_class["SaveInput"].saved[0].storage_id != by_class["SaveOutput"].saved[0].storage_id
    assert model.edges.shape == (2, 2)
    assert_layered(model)


def test_multi_output_node_gets_both_gradients():
    x, w = leaf(3), leaf(3, seed=1)
    model = extract_graph(TwoOutputs, (x, w), value_limit=ALL_VALUES)
    assert [o.node for o in model.outputs] == [0, 0]
    flow = model.flows[0]
    assert [g.shape for g in flow.grad_outputs] == [(3,), ()]
    assert len(flow.grad_inputs) == 2
    outs = TwoOutputs.apply(*fresh((x, w)))
    grads = make_grad_outputs(outs)
    np.testing.assert_allclose(flow.grad_outputs[0].values, grads[0].numpy())
    a, b = fresh((x, w))
    outs = TwoOutputs.apply(a, b)
    expected = torch.autograd.grad(outs, (a, b), grads)
    got = leaf_grads(model)
    np.testing.assert_allclose(got[0], expected[0].numpy())
    np.testing.assert_allclose(got[1], expected[1].numpy())


def test_non_differentiable_outputs():
    x = leaf(5)
    model = extract_graph(WithNonDifferentiable, (x,), value_limit=ALL_VALUES)
    assert [(o.differentiable, o.node, o.dtype) for o in model.outputs] == [
        (True, 0, "float64"),
        (False, None, "float64"),
        (False, None, "int64"),
    ]
    assert model.nodes[0].flags == ("mark_non_differentiable",)
    assert model.backward_error is None
    np.testing.assert_allclose(leaf_grads(model)[0], 3 * make_grad_outputs(WithNonDifferentiable.apply(x))[0])


def test_once_differentiable_flag():
    x = leaf(3)
    assert extract_graph(OnceDifferentiable, (x,)).nodes[0].flags == ("once_differentiable",)
    assert extract_graph(SaveInput, (x,)).nodes[0].flags == ()


def test_materialize_grads_flag():
    x = leaf(3)
    model = extract_graph(LazyGrads, (x,))
    assert model.nodes[0].flags == ("materialize_grads_off",)
    assert "set_materialize_grads" not in LazyGrads._backward_cls.__dict__  # the watch is undone


def test_mark_dirty_flag_and_gradient():
    x = leaf(4)
    before = x.detach().clone()
    model = extract_graph(InPlaceDouble, (x,), value_limit=ALL_VALUES)
    torch.testing.assert_close(x.detach(), before)  # apply got a clone
    assert x.grad is None
    assert model.nodes[0].flags == ("mark_dirty",)
    assert [(n.kind, n.input_name) for n in model.nodes] == [("custom", None), ("leaf", "x")]
    g = make_grad_outputs(InPlaceDouble.apply(x.clone()))[0]
    np.testing.assert_allclose(leaf_grads(model)[0], 2 * g.numpy())
    assert "mark_dirty" not in InPlaceDouble._backward_cls.__dict__


def test_ctx_attribute_tensors_are_listed_but_not_hooked():
    x = leaf(4)
    with PackRecorder() as recorder:
        model = extract_graph(CtxAttribute, (x,))
    assert_matches_hooks(model, recorder)
    saved = model.nodes[0].saved
    assert [(s.name, s.via, s.role) for s in saved] == [
        ("scale", "ctx_attribute", "intermediate"),
        ("pair[0]", "ctx_attribute", "intermediate"),
    ]
    assert recorder.packed == []
    assert (
        model.saved_bytes(("ctx_attribute",)) == model.saved_bytes_unique == 2 * x.untyped_storage().nbytes()
    )


def test_leaf_gradients_match_a_plain_backward_on_a_deeper_graph():
    x, w = leaf(3, 4), leaf(4, 2, seed=1)
    y = SaveOutput.apply(torch.tanh(x @ w)) * SaveInput.apply(x).sum()
    grads = [torch.ones_like(y)]
    model = graph_from_outputs(y, (x, w), ["x", "w"], grad_outputs=grads, value_limit=ALL_VALUES)
    assert model.backward_order[0] == model.outputs[0].node
    assert_runs_after_parents(model)
    expected = torch.autograd.grad(y, (x, w), grads, retain_graph=True)
    got = leaf_grads(model)
    np.testing.assert_allclose(got[0], expected[0].numpy())
    np.testing.assert_allclose(got[1], expected[1].numpy())
    assert x.grad is None and w.grad is None  # the recorded backward leaves .grad alone
    y.backward(grads[0])  # and, with retain_graph (the default here), the graph still works


def test_an_output_that_is_a_leaf_has_no_node():
    x = leaf(3)
    model = graph_from_outputs((x, x * 2), (x,), ["x"])
    assert [o.node for o in model.outputs] == [None, 0]
    assert [n.name for n in model.nodes] == ["MulBackward0", "AccumulateGrad"]
    assert x.grad is None


def test_existing_grad_is_kept():
    x = leaf(3)
    x.grad = torch.full_like(x, 7.0)
    old = x.grad
    graph_from_outputs((x * 2).sum(), (x,))
    assert x.grad is old and torch.equal(old, torch.full_like(x, 7.0))


def test_unfused_conv_bn_module_matches_the_pack_hook():
    torch.manual_seed(0)
    model_nn = nn.Sequential(
        nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.Conv2d(4, 4, 3, bias=False)
    )
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    with PackRecorder() as recorder:
        y = model_nn(x)
    params = list(model_nn.named_parameters())
    model = graph_from_outputs(y, [x] + [p for _, p in params], ["x"] + [n for n, _ in params])
    assert_matches_hooks(model, recorder)
    assert model_edges(model) == oracle_edges([y])
    conv = [n for n in model.nodes if n.name == "ConvolutionBackward0"]
    assert len(conv) == 2
    first_inputs = {s.name: s.role for s in conv[-1].saved}
    assert first_inputs == {"input": "input", "weight": "input"}
    assert {n.input_name for n in model.nodes if n.kind == "leaf"} == {"x"} | {n for n, _ in params}
    json.dumps(model.to_dict(), allow_nan=False)


def test_saved_tensor_modified_in_place_is_reported_not_fatal():
    x = leaf(3)
    y = x.exp()
    z = y * 1  # MulBackward0 saves nothing of y (other is a number)
    y.add_(1)  # ExpBackward0's saved result is now stale
    model = graph_from_outputs(z.sum() + y.sum(), (x,))
    exp = next(n for n in model.nodes if n.name == "ExpBackward0")
    assert exp.saved[0].error and "inplace" in exp.saved[0].error
    assert model.backward_error is not None and "inplace" in model.backward_error
    json.dumps(model.to_dict(), allow_nan=False)


def test_backward_error_names_the_function():
    x, w = leaf(3), leaf(3, seed=1)
    model = extract_graph(WrongCount, (x, w))
    assert model.backward_error is not None and "WrongCount" in model.backward_error
    assert model.backward_order == [0]
    assert len(model.nodes) == 3  # the graph is there even though backward failed


def test_forward_error_is_a_user_code_error():
    from gradviz.schema.errors import UserCodeError

    with pytest.raises(UserCodeError) as info:
        extract_graph(SaveInput, (leaf(2), leaf(2)))
    assert info.value.kind == "forward"


def test_to_dict_schema():
    x, w = leaf(3), leaf(3, seed=1)
    d = extract_graph(TwoOutputs, (x, w), ["x", "w"]).to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d
    assert set(d) >= {"nodes", "edges", "backward_order"}
    for node in d["nodes"]:
        assert set(node) >= {"id", "name", "kind", "saved"}
        assert node["kind"] in ("custom", "builtin", "leaf")
        for s in node["saved"]:
            assert set(s) >= {"name", "shape", "dtype", "bytes", "via"}
            assert s["via"] in ("save_for_backward", "ctx_attribute", "builtin")
    assert d["edges"] == [[0, 1], [0, 2]]
    assert [n["input_name"] for n in d["nodes"][1:]] == ["x", "w"]


def test_non_finite_gradients_stay_strict_json():
    x = leaf(3)
    model = graph_from_outputs(
        (x / 0.0).sum(), (x,), grad_outputs=[torch.tensor(float("inf"), dtype=x.dtype)]
    )
    text = json.dumps(model.to_dict(), allow_nan=False)
    assert "null" in text


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, needs_cuda])])
def test_graph_on_each_device_matches_the_pack_hook(device):
    x, w = leaf(5, 3).to(device), leaf(5, 3, seed=1).to(device)
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    with PackRecorder() as recorder:
        model = extract_graph(TwoOutputs, (x, w), value_limit=ALL_VALUES)
    assert_matches_hooks(model, recorder)
    assert {s.device for n in model.nodes for s in n.saved} == {str(x.device)}
    assert model.backward_error is None
    a, b = fresh((x, w))
    outs = TwoOutputs.apply(a, b)
    expected = torch.autograd.grad(outs, (a, b), make_grad_outputs(outs))
    got = leaf_grads(model)
    np.testing.assert_allclose(got[0], expected[0].cpu().numpy())
    np.testing.assert_allclose(got[1], expected[1].cpu().numpy())
    json.dumps(model.to_dict(), allow_nan=False)


# --------------------------------------------------------------------------- layout


def wide_graph():
    """Branches, joins, a shared leaf and a custom node deep inside: enough to tangle a bad layout."""
    x, w = leaf(4), leaf(4, seed=1)
    parts = [SaveInput.apply(x * k) + w.sin() for k in range(1, 6)]
    joined = parts[0]
    for p in parts[1:]:
        joined = joined * p.tanh()
    return graph_from_outputs((joined.sum(), parts[2].exp().sum()), (x, w), ["x", "w"])


def test_layout_is_deterministic_and_layered():
    first, second = wide_graph(), wide_graph()
    np.testing.assert_array_equal(first.positions, second.positions)
    assert first.positions.shape == (len(first.nodes), 2)
    assert first.edges.dtype == np.int64 and first.edges.shape[1] == 2
    assert_layered(first)
    assert np.isfinite(first.positions).all()
    # outputs' nodes on the top layer
    tops = [o.node for o in first.outputs]
    assert first.positions[tops[0], 1] == first.positions[:, 1].max()
    assert len({tuple(p) for p in first.positions.tolist()}) == len(first.nodes)  # no two nodes overlap


def test_empty_graph():
    model = graph_from_outputs(torch.ones(3), ())
    assert model.nodes == [] and model.edges.shape == (0, 2) and model.positions.shape == (0, 2)
    assert model.backward_order == [] and model.saved_bytes_unique == 0
