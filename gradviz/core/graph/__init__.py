"""The backward graph of one forward, as plain data: nodes, edges, saved tensors, one backward.

One module per job: ``walk`` follows grad_fn from the outputs, ``build`` describes each node and
what it saved (counted by ``gradviz.core.saved``), ``ctx_calls`` watches the ctx flags forward
sets, ``backward_order`` records one backward, ``layout`` places the nodes, and ``extract`` runs
them in that order. The result types are the torch-free ``gradviz.schema.graph``; the app (another
process) draws ``GraphModel.to_dict()`` with ``pyqtgraph.GraphItem.setData(pos=..., adj=...)``.
"""

from gradviz.core.graph.extract import extract_graph, graph_from_outputs, graph_of_source, make_grad_outputs
from gradviz.core.graph.layout import layered_layout
from gradviz.schema.graph import (
    FLAGS,
    ROLES,
    VALUE_LIMIT,
    VIAS,
    GradSummary,
    GraphModel,
    Node,
    NodeFlow,
    OutputInfo,
    SavedEntry,
)

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
    "extract_graph",
    "graph_from_outputs",
    "graph_of_source",
    "layered_layout",
    "make_grad_outputs",
]
