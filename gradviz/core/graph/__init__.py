"""The backward graph of one forward, as plain data: nodes, edges, saved tensors, one backward.

One module per job: ``walk`` follows grad_fn from the outputs, ``build`` describes each node and
what it saved (counted by ``gradviz.core.saved``), ``ctx_calls`` watches the ctx flags forward
sets, ``backward_order`` records one backward, ``layout`` places the nodes, and ``extract`` runs
them in that order. The result types are the torch-free ``gradviz.schema.graph`` (import them
from there); the app (another process) draws ``GraphModel.to_dict()`` with ``pyqtgraph.GraphItem.setData(pos=..., adj=...)``.
"""

from gradviz.core.graph.extract import extract_graph, graph_from_outputs, graph_of_source, make_grad_outputs
from gradviz.core.graph.layout import layered_layout

__all__ = [
    "extract_graph",
    "graph_from_outputs",
    "graph_of_source",
    "layered_layout",
    "make_grad_outputs",
]
