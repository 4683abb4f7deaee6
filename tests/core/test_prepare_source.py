"""One step from user source to inputs: the check, the sweep, a region and the graph run the same inputs.

A graph drawn from its own inputs, without ``jitter``, would show gradients of other inputs than
the ones checked. The first test goes through the worker's handlers, as the window
does; the second holds every ``*_source`` entry point to ``prepare_source``, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gradviz.core.check as check_module
import gradviz.core.graph.extract as extract_module
import gradviz.core.region as region_module
import gradviz.core.sweep as sweep_module
from gradviz.core.check import check_source
from gradviz.core.loader import load_file
from gradviz.schema.graph import GraphModel
from gradviz.schema.requests import CodeSource, GraphRequest
from gradviz.schema.settings import CheckSettings
from gradviz.worker.handlers import handle_graph

SQUARE = """
    import torch


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x)
            return x * x * w

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad, None


    def example_inputs(device, dtype):
        x = torch.randn(6, device=device, dtype=dtype, requires_grad=True)
        return x, torch.ones(6, device=device, dtype=dtype)
"""


def test_graph_shows_the_jittered_inputs_the_check_used(write_source):
    """d(x²)/dx = 2x: the check's analytic diagonal and the graph's gradient into x name the same x."""
    path = write_source(SQUARE)
    settings = CheckSettings(jitter=0.3, seed=3)
    check = check_source(load_file(path), None, settings)
    doubled_x = np.diagonal(check.blocks[0].analytic)  # 2·x at the inputs the check used
    plain = check_source(load_file(path), None, CheckSettings(seed=3))
    assert not np.allclose(doubled_x, np.diagonal(plain.blocks[0].analytic))  # jitter moved them

    reply = handle_graph(GraphRequest(CodeSource(path=str(path)), settings), lambda message: None)
    graph = GraphModel.from_dict(reply["graph"])
    (custom,) = [n for n in graph.nodes if n.kind == "custom"]
    flow = graph.flows[custom.id]
    grad, into_x = flow.grad_outputs[0].values, flow.grad_inputs[0].values
    np.testing.assert_allclose(into_x, doubled_x * grad, rtol=1e-14, atol=0)


class _Seen(Exception):
    """Raised by a recorder once it has the inputs: the rest of the run is not needed."""


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_check_sweep_region_and_graph_get_the_same_inputs(write_source, monkeypatch, dtype):
    from gradviz.core.graph import graph_of_source
    from gradviz.core.prepare import prepare_source
    from gradviz.core.region import region_of_source
    from gradviz.core.sweep import sweep_source

    path = write_source(SQUARE)
    settings = CheckSettings.for_dtype(dtype, jitter=0.25, seed=11)
    seen: dict[str, tuple] = {}

    def recorder(view: str, position: int):
        def record(*args, **kwargs):
            given = args[position]
            seen[view] = tuple(given.args) if hasattr(given, "args") else tuple(given)
            raise _Seen

        return record

    monkeypatch.setattr(check_module, "check_function", recorder("check", 1))
    monkeypatch.setattr(sweep_module, "sweep_function", recorder("sweep", 1))
    monkeypatch.setattr(region_module, "region_of_function", recorder("region", 1))
    monkeypatch.setattr(extract_module, "extract_graph", recorder("graph", 1))
    runs = {
        "check": lambda loaded: check_source(loaded, None, settings),
        "sweep": lambda loaded: sweep_source(loaded, None, settings),
        "region": lambda loaded: region_of_source(loaded, None, settings, (0, 0), range(0, 2), range(0, 2)),
        "graph": lambda loaded: graph_of_source(loaded, None, settings),
    }
    for run in runs.values():
        with pytest.raises(_Seen):
            run(load_file(path))

    expected = prepare_source(load_file(path), None, settings).inputs.args
    unjittered = prepare_source(load_file(path), None, CheckSettings.for_dtype(dtype, seed=11)).inputs.args
    assert expected[0].dtype == getattr(torch, dtype)
    assert not torch.equal(expected[0], unjittered[0])  # the jitter is there to be lost
    assert set(seen) == set(runs)
    for view, args in seen.items():
        assert len(args) == len(expected), view
        for got, want in zip(args, expected):
            assert got.dtype == want.dtype and got.device == want.device, view
            assert torch.equal(got, want), f"{view} ran other inputs than prepare_source gives"
