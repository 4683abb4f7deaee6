"""Front-ends read the typed GraphModel and ConvBNStudy: the graph's text from the model, and every
value the window's panels read from the dicts is on the models too."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from gradviz.core.graph import graph_from_outputs
from gradviz.core.memory import conv_bn_study
from gradviz.schema.graph import GraphModel
from gradviz.schema.memory import ConvBNStudy, VariantMemory, tensor_rows
from gradviz.schema.report import format_graph


def through_json(d: dict) -> dict:
    return json.loads(json.dumps(d, allow_nan=False))


@pytest.fixture(scope="module")
def graph() -> GraphModel:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    return graph_from_outputs(module(x), (x,), ["x"])


@pytest.fixture(scope="module")
def study() -> ConvBNStudy:
    return conv_bn_study(2, (2, 3, 8, 8), 4, 3, dtype="float64")


def test_the_graph_text_reads_the_model_and_is_the_same_from_its_dict(graph):
    text = format_graph(graph)
    assert format_graph(GraphModel.from_dict(through_json(graph.to_dict()))) == text
    lines = text.splitlines()
    assert lines[-1] == f"saved for backward: {graph.saved_bytes_unique:,} B (each storage once)"
    assert lines[-2] == "backward order: " + " -> ".join(f"#{k}" for k in graph.backward_order)
    for node in graph.nodes:
        assert any(line.startswith(f"#{node.id:<3} {node.name}") for line in lines)
    saved = [s for n in graph.nodes for s in n.saved]
    assert saved and all(f"saved {s.name}: " in text for s in saved)
    leaf = next(n for n in graph.nodes if n.kind == "leaf" and n.input_name)
    assert f"[leaf: {leaf.input_name}]" in text


def test_the_graph_model_carries_what_the_graph_panel_reads(graph):
    d = through_json(graph.to_dict())
    model = GraphModel.from_dict(d)
    for node, entry in zip(model.nodes, d["nodes"], strict=True):
        assert (node.id, node.name, node.kind, node.class_name) == (entry["id"], entry["name"], entry["kind"], entry["class"])
        assert model.positions[node.id].tolist() == entry["position"]
        assert [s.to_dict() for s in node.saved] == entry["saved"]
        assert (node.input_name, node.input_index) == (entry.get("input_name"), entry.get("input_index"))
        assert node.saved_bytes == entry["saved_bytes"]
    assert model.edge_slots.tolist() == d["edge_slots"] and model.saved_bytes_unique == d["saved_bytes_unique"]
    assert [(o.index, o.node) for o in model.outputs] == [(o["index"], o["node"]) for o in d["outputs"]]
    assert model.edges.tolist() == d["edges"] and model.backward_order == d["backward_order"]
    assert {k: f.step for k, f in model.flows.items()} == {f["node"]: f["step"] for f in d["flows"]}
    assert model.backward_error == d["backward_error"]


def test_the_study_carries_what_the_memory_panel_reads(study):
    d = through_json(study.to_dict())
    back = ConvBNStudy.from_dict(d)
    assert list(back.variants) == list(d["variants"]) == ["unfused", "fused"]
    for name, variant in back.variants.items():
        entry = d["variants"][name]
        assert isinstance(variant, VariantMemory)
        assert (variant.saved_bytes, variant.count) == (entry["saved_bytes"], entry["count"])
        assert [t.to_dict() for t in variant.tensors] == entry["tensors"]
        assert [t.to_dict() for t in variant.ctx_tensors] == entry.get("ctx_tensors", [])
        assert variant.ctx_attribute_bytes == entry.get("ctx_attribute_bytes", 0)
        assert variant.on_cuda == ("peak_bytes" in entry)
        assert len(tensor_rows(variant)) == len(entry["tensors"]) + len(entry.get("ctx_tensors", []))
    assert back.fused.ctx_tensors, "the fused Function keeps ctx attributes: the rows above compared them"
    assert back.tensor_dtype == "float64" == study.tensor_dtype
    assert (back.layers, back.shape, back.device) == (d["layers"], tuple(d["shape"]), d["device"])
