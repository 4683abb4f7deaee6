"""A sweep and a region of one audit node, through a real worker: of that node's Function at
the inputs the model's forward gave it (captured here by wrapping ``apply``, the cells computed
here by ``torch.autograd.functional.jacobian``), never of other code or other inputs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from gradviz.core.audit import inputs_digest
from gradviz.schema.requests import (
    AuditRequest,
    CheckRequest,
    CodeSource,
    NodeRef,
    Region,
    RegionRequest,
    SweepRequest,
)
from gradviz.schema.result_files import read_region
from gradviz.schema.settings import CheckSettings, SweepOptions
from gradviz.worker.client import WorkerClient
from tests.core import audit_models
from tests.paths import ROOT

MODELS = ROOT / "tests" / "core" / "audit_models.py"
SETTINGS = CheckSettings(seed=3)
NOISY = '''
import os

import torch

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 3 * g

class Noisy(torch.nn.Module):
    def forward(self, x):  # noise from the OS, not from torch's seeded generator: other activations each run
        seed = int.from_bytes(os.urandom(8), "little") % 2**63
        return Scale.apply(x + torch.randn(x.shape, generator=torch.Generator().manual_seed(seed), dtype=x.dtype))

def example_inputs(device, dtype):
    return (torch.randn(5, device=device, dtype=dtype, requires_grad=True),)
'''


@pytest.fixture(scope="module")
def worker():
    with WorkerClient(output=None) as client:
        yield client


@pytest.fixture(scope="module")
def audited(worker) -> list[dict]:
    reply = worker.request(AuditRequest(CodeSource(path=str(MODELS), function="TwoNorms"), SETTINGS, 120, node_files=True))
    assert reply.ok, reply.error
    return reply.result["nodes"]


def captured_calls(monkeypatch) -> list[tuple]:
    """TwoNorms built and run as the audit runs it, each BadRMSNormFn call's arguments copied."""
    calls: list[tuple] = []
    apply = audit_models.BadRMSNormFn.apply

    def recording(*args):
        calls.append(tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args))
        return apply(*args)

    monkeypatch.setattr(audit_models.BadRMSNormFn, "apply", recording)
    with torch.random.fork_rng():
        torch.manual_seed(SETTINGS.seed)
        model = audit_models.TwoNorms().to(dtype=torch.float64)
        (x,) = audit_models.example_inputs(torch.device("cpu"), torch.float64)
    model(x)
    return calls


def node_code(document: dict, place: int) -> CodeSource:
    return CodeSource(path=str(MODELS), function="TwoNorms", node=NodeRef(place, document["inputs"]))


def test_the_sweep_of_a_node_is_of_its_function_at_its_captured_inputs(worker, audited, monkeypatch):
    args = captured_calls(monkeypatch)[1]  # the second call: several rows, where its weight gradient is wrong
    assert audited[1]["inputs"] == inputs_digest(args)
    reply = worker.request(SweepRequest(node_code(audited[1], 2), SETTINGS, 120, SweepOptions(block=(0, 1))))
    assert reply.ok, reply.error
    sweep = reply.result["sweep"]
    assert sweep["function"] == "BadRMSNormFn" and sweep["verdict"] == "backward_wrong"
    weight_block = next(b for b in sweep["blocks"] if (b["output"], b["input"]) == (0, 1))
    out = audit_models.BadRMSNormFn.apply(*args)
    assert weight_block["shape"] == [out.numel(), args[1].numel()]  # the node's own sizes, not the editor's


def test_a_region_of_a_node_holds_torchs_cells_at_its_captured_inputs(worker, audited, monkeypatch):
    x, weight, eps = captured_calls(monkeypatch)[1]
    reply = worker.request(RegionRequest(node_code(audited[1], 2), Region(0, 1, 8, 0, 24, 8), SETTINGS, 120))
    assert reply.ok, reply.error
    region = read_region(reply.result).comparison
    wrong = torch.autograd.functional.jacobian(lambda w: audit_models.BadRMSNormFn.apply(x, w, eps), weight)
    right = torch.autograd.functional.jacobian(lambda w: audit_models.RMSNormFn.apply(x, w, eps), weight)
    np.testing.assert_allclose(region.analytic, wrong.reshape(-1, weight.numel())[8:].numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(region.numerical, right.reshape(-1, weight.numel())[8:].numpy(), rtol=1e-6, atol=1e-8)
    assert not np.allclose(region.analytic, region.numerical)  # rows of the second and later rows of x: where the bug is


def test_a_forward_that_draws_other_activations_is_refused_in_one_line(worker, tmp_path):
    path = tmp_path / "noisy.py"
    path.write_text(NOISY)
    code = CodeSource(path=str(path), function="Noisy")
    reply = worker.request(AuditRequest(code, SETTINGS, 120, node_files=True))
    assert reply.ok, reply.error
    node = dataclasses.replace(code, node=NodeRef(1, reply.result["nodes"][0]["inputs"]))
    swept = worker.request(SweepRequest(node, SETTINGS, 120))
    assert not swept.ok and "got other inputs this time than in the audit" in swept.error["message"]
    assert "\n" not in swept.error["message"]


def test_a_call_past_the_forwards_calls_or_a_node_check_is_refused(worker, audited):
    past = worker.request(SweepRequest(node_code(audited[1], 3), SETTINGS, 120))
    assert not past.ok and "made 2 custom call(s) this time, not the 3" in past.error["message"]
    check = worker.request(CheckRequest(node_code(audited[1], 2), SETTINGS, 120))
    assert not check.ok and "checked, and its graph drawn, by the audit itself" in check.error["message"]


def test_a_node_in_editor_text_is_refused_before_the_worker(tmp_path: Path):
    with pytest.raises(Exception, match="found in a file or a target, not in editor text"):
        CodeSource(source="x = 1", node=NodeRef(1, "")).validate()
