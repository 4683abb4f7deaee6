"""The graph and memory result types: from_dict reads back exactly what to_dict wrote, without torch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from gradviz.core.graph import extract_graph, graph_from_outputs
from gradviz.core.loader import choose_function, load_file
from gradviz.core.memory import conv_bn_study, memory_sweep, saved_bytes
from gradviz.schema.graph import GraphModel, NodeFlow
from gradviz.schema.library import builtin_functions
from gradviz.schema.memory import ConvBNStudy, SavedBytes, SweepRow
from tests.paths import ROOT

ENTRIES = builtin_functions()


def through_json(d: dict) -> dict:
    return json.loads(json.dumps(d, allow_nan=False))


def assert_same_flow(a: NodeFlow, b: NodeFlow) -> None:
    assert a.step == b.step
    for mine, theirs in ((a.grad_outputs, b.grad_outputs), (a.grad_inputs, b.grad_inputs)):
        assert len(mine) == len(theirs)
        for g, h in zip(mine, theirs):
            assert (g is None) == (h is None)
            if g is not None:
                assert (g.shape, g.dtype) == (h.shape, h.dtype)
                assert g.norm == h.norm or (math.isnan(g.norm) and math.isnan(h.norm))
                if g.values is None:
                    assert h.values is None
                else:
                    np.testing.assert_array_equal(g.values, h.values)


def assert_same_graph(a: GraphModel, b: GraphModel) -> None:
    assert a.nodes == b.nodes and a.outputs == b.outputs
    assert (a.backward_order, a.backward_error) == (b.backward_order, b.backward_error)
    for mine, theirs in ((a.edges, b.edges), (a.edge_slots, b.edge_slots), (a.positions, b.positions)):
        assert mine.dtype == theirs.dtype
        np.testing.assert_array_equal(mine, theirs)
    assert a.flows.keys() == b.flows.keys()
    for node in a.flows:
        assert_same_flow(a.flows[node], b.flows[node])


def library_graphs():
    for entry in ENTRIES:
        loaded = load_file(entry.path)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            args = loaded.example_inputs(torch.device("cpu"), torch.float64)
        yield pytest.param(
            lambda loaded=loaded, args=args: extract_graph(choose_function(loaded), args), id=entry.name
        )


def module_graph() -> GraphModel:
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    return graph_from_outputs(module(x), (x,), ["x"])


GRAPHS = [
    *library_graphs(),
    pytest.param(module_graph, id="module"),
    pytest.param(lambda: graph_from_outputs(torch.ones(3), ()), id="empty"),
    pytest.param(lambda: graph_from_outputs(torch.ones(2, requires_grad=True) * 2, ()), id="unlabelled-leaf"),
]


@pytest.mark.parametrize("make", GRAPHS)
def test_graph_model_round_trips(make):
    model = make()
    d = model.to_dict()
    back = GraphModel.from_dict(through_json(d))
    assert back.to_dict() == d
    assert_same_graph(back, model)


def test_non_finite_gradients_come_back_with_their_sign():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    model = graph_from_outputs(
        (x / 0.0).sum(), (x,), grad_outputs=[torch.tensor(-float("inf"), dtype=x.dtype)]
    )
    d = model.to_dict()
    back = GraphModel.from_dict(through_json(d))
    assert back.to_dict() == d  # strict JSON: "-inf" both ways
    seen = model.flows[0].grad_outputs[0]
    assert math.isinf(seen.norm) and back.flows[0].grad_outputs[0].norm == seen.norm
    assert back.flows[0].grad_outputs[0].values.tolist() == seen.values.tolist() == -math.inf


def small_study(**kwargs) -> ConvBNStudy:
    return conv_bn_study(2, (2, 3, 8, 8), 4, 3, dtype="float64", **kwargs)


def test_conv_bn_study_round_trips():
    study = small_study()
    d = study.to_dict()
    back = ConvBNStudy.from_dict(through_json(d))
    assert back.to_dict() == d
    # to_dict writes no dtype, out_channels or kernel; everything else comes back as it was.
    assert (back.dtype, back.out_channels, back.kernel) == (None, None, None)
    expected = {**vars(study), "dtype": None, "out_channels": None, "kernel": None}
    assert vars(back) == expected


def test_a_study_without_checks_round_trips():
    from gradviz.core import memory

    study = memory._study(1, (2, 3, 8, 8), 4, 3, "cpu", "float32", seed=0, check=False)
    assert study.comparisons == [] and math.isnan(study.formula_gap)
    d = study.to_dict()
    back = ConvBNStudy.from_dict(through_json(d))
    assert back.to_dict() == d and math.isnan(back.formula_gap)


class KeepsCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = x.detach() * 2
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_saved_bytes_and_sweep_rows_round_trip():
    x = torch.randn(5, 3, requires_grad=True)
    with_ctx, with_view = saved_bytes(KeepsCtx, (x,)), saved_bytes(lambda x: (x[1:] * x[1:]).exp(), (x,))
    assert with_ctx.ctx_tensors and any(t.shared for t in with_view.tensors)  # both kinds of entry occur
    for measured in (with_ctx, with_view):
        assert SavedBytes.from_dict(through_json(measured.to_dict())) == measured
    rows = memory_sweep([1, 2], [1, 2], image=(3, 8, 8))
    assert [SweepRow.from_dict(through_json(r.to_dict())) for r in rows] == rows


TORCH_FREE = """
import json, sys
for name in ("torch", "PySide6", "pyqtgraph", "gradviz.core", "gradviz.app"):
    sys.modules[name] = None  # any import of these now raises ImportError
from gradviz.schema.graph import GraphModel
from gradviz.schema.memory import ConvBNStudy, SweepRow
data = json.load(sys.stdin)
assert GraphModel.from_dict(data["graph"]).to_dict() == data["graph"]
assert ConvBNStudy.from_dict(data["study"]).to_dict() == data["study"]
assert [SweepRow.from_dict(r).to_dict() for r in data["sweep"]] == data["sweep"]
print("ok")
"""


def test_the_result_types_need_no_torch():
    data = {
        "graph": module_graph().to_dict(),
        "study": small_study().to_dict(),
        "sweep": [r.to_dict() for r in memory_sweep([1], [2], image=(3, 8, 8))],
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", TORCH_FREE],
        input=json.dumps(data, allow_nan=False),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
