"""An audit node's graph (the window's graph panel and step-through of a node): drawn at the inputs
the model really passed that call, for a custom Function and for a custom op, and never part of a
verdict."""

from __future__ import annotations

import torch

from gradviz.core.audit import audit_callable
from gradviz.schema.graph import GraphModel
from gradviz.schema.settings import CheckSettings
from tests.core import audit_models
from tests.core.audit_oracle import record_calls


def test_each_checked_node_has_its_graph_at_its_captured_inputs():
    torch.manual_seed(1)
    model, x = audit_models.TwoNorms(), audit_models.example_inputs("cpu", torch.float64)[0]
    audit = audit_callable(model, (x,), CheckSettings(), name="TwoNorms", graphs=True)
    oracle = record_calls(model, x)
    assert len(audit.nodes) == len(oracle) == 2
    for node, call in zip(audit.nodes, oracle):
        assert node.graph_error is None
        graph = GraphModel.from_dict(node.graph)
        (custom,) = [n for n in graph.nodes if n.kind == "custom"]
        assert custom.class_name == call.name == "BadRMSNormFn"
        # the backward order covers the custom node and reaches a leaf for each differentiated argument
        assert custom.id in graph.backward_order
        differentiated = [a for a in call.args if isinstance(a, torch.Tensor) and a.requires_grad]
        assert len([n for n in graph.nodes if n.kind == "leaf"]) == len(differentiated)
    # the verdicts are the same with or without the graphs
    plain = audit_callable(model, (x,), CheckSettings(), name="TwoNorms")
    assert [n.status for n in plain.nodes] == [n.status for n in audit.nodes] == [
        "passed" if c.gradcheck() else "failed" for c in oracle
    ]
    assert all(n.graph is None for n in plain.nodes)


class OpModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 3, dtype=torch.float64))

    def forward(self, a):
        return audit_models.matmul(a, self.w).sum(-1)


def test_a_custom_ops_node_has_its_graph_too():
    audit = audit_callable(OpModel(), (torch.randn(2, 4, dtype=torch.float64, requires_grad=True),),
                           CheckSettings(), name="OpModel", graphs=True)  # fmt: skip
    (node,) = audit.nodes
    assert node.function == "gvaudit::matmul" and node.graph_error is None
    graph = GraphModel.from_dict(node.graph)
    assert len([n for n in graph.nodes if n.kind == "leaf"]) == 2  # a and the weight
    assert graph.backward_order
