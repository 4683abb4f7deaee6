"""``gradviz.check(module, x, parameters=...)``: an nn.Module's parameters checked as inputs,
blocks named by parameter, verdict equal to gradcheck over ``functional_call`` (the oracle)."""

from __future__ import annotations

import json

import pytest
import torch

import gradviz
from gradviz.core.large import BYTES_PER_CELL
from gradviz.schema.settings import CheckSettings
from gradviz.testing import assert_gradients
from tests.real_world.oracle import module_gradcheck_passes


class LinearFn(torch.autograd.Function):
    """``x @ w.T + b`` with its own backward; ``weight_scale`` 0.5 makes grad_weight wrong."""

    weight_scale = 1.0

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.t() + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, LinearFn.weight_scale * (g.t() @ x), g.sum(0)


class HalfWeightFn(LinearFn):
    weight_scale = 0.5

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, 0.5 * (g.t() @ x), g.sum(0)


class Net(torch.nn.Module):
    def __init__(self, fn: type[torch.autograd.Function]) -> None:
        super().__init__()
        self.fn = fn
        self.layer = torch.nn.Linear(3, 2, dtype=torch.float64)
        self.scale = torch.nn.Parameter(torch.tensor([1.5], dtype=torch.float64))

    def forward(self, x):
        return torch.tanh(self.fn.apply(x, self.layer.weight, self.layer.bias)) * self.scale


def _net(fn: type[torch.autograd.Function]) -> tuple[Net, torch.Tensor]:
    torch.manual_seed(0)
    return Net(fn), torch.randn(4, 3, dtype=torch.float64, requires_grad=True)


def _snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters()}


@pytest.mark.parametrize("fn", [LinearFn, HalfWeightFn])
def test_the_verdict_on_all_parameters_is_gradchecks(fn):
    module, x = _net(fn)
    names = [n for n, _ in module.named_parameters()]
    before = _snapshot(module)
    report = gradviz.check(module, x, parameters=True, raise_exception=False)
    assert report.passed == module_gradcheck_passes(module, x, names)
    titles = {(b.output, report.result.inputs[b.input].name) for b in report.blocks}
    assert titles == {(0, "x"), (0, "layer.weight"), (0, "layer.bias"), (0, "scale")}
    for name, tensor in module.named_parameters():  # bitwise as they were, and no .grad left
        assert torch.equal(tensor, before[name]) and tensor.grad is None
    assert x.grad is None


def test_a_wrong_weight_gradient_fails_in_the_weight_block_only():
    module, x = _net(HalfWeightFn)
    with pytest.raises(gradviz.GradientMismatch) as caught:
        gradviz.check(module, x, parameters=True)
    report = caught.value.report
    assert not module_gradcheck_passes(module, x, ["layer.weight"])  # the oracle agrees it is wrong
    assert not report.block(0, "layer.weight").passed
    for name in ("x", "layer.bias", "scale"):
        assert report.block(0, name).passed
    assert "out0 / layer.weight" in str(report)
    document = json.loads(report.to_json())
    names = [i["name"] for i in document["inputs"]]
    assert names == ["x"] + [n for n, _ in module.named_parameters()]  # named_parameters' order
    failing = [b for b in document["blocks"] if b["failing"]]
    assert [names[b["input"]] for b in failing] == ["layer.weight"]
    assert failing[0]["worst_cell"].startswith("out0[") and "/ layer.weight[" in failing[0]["worst_cell"]


def test_without_parameters_only_the_inputs_are_checked_as_before():
    module, x = _net(HalfWeightFn)
    report = gradviz.check(module, x)  # the wrong weight gradient is not looked at
    assert report.passed == torch.autograd.gradcheck(module, (x,), raise_exception=False)
    assert len(report.result.inputs) == 1


def test_named_parameters_check_those_only_and_match_the_oracle():
    module, x = _net(HalfWeightFn)
    report = gradviz.check(module, x, parameters=["layer.bias", "scale"], raise_exception=False)
    assert [i.name for i in report.result.inputs] == ["x", "layer.bias", "scale"]
    assert report.passed == module_gradcheck_passes(module, x, ["layer.bias", "scale"])
    assert report.passed


def test_assert_gradients_takes_parameters_too():
    module, x = _net(HalfWeightFn)
    with pytest.raises(AssertionError, match=r"layer\.weight"):
        assert_gradients(module, x, parameters=["layer.weight"])


def test_an_unknown_parameter_name_is_refused_with_the_valid_ones():
    module, x = _net(LinearFn)
    with pytest.raises(ValueError, match=r"no parameter 'layer\.wieght'") as caught:
        gradviz.check(module, x, parameters=["layer.wieght"])
    for name in ("layer.weight", "layer.bias", "scale"):
        assert name in str(caught.value)


def test_parameters_need_a_module():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match=r"nn\.Module"):
        gradviz.check(torch.sin, x, parameters=True)


def test_the_memory_guard_counts_the_parameter_columns():
    """A limit the inputs' Jacobian fits under sends the run with the parameters' columns to the
    large path (random projections, no full Jacobian held), as for any input that size."""
    module = torch.nn.Linear(8, 64, dtype=torch.float64)
    x = torch.randn(2, 8, dtype=torch.float64, requires_grad=True)
    rows, params = 2 * 64, sum(p.numel() for p in module.parameters())
    chunks = 2 * CheckSettings().chunk_bytes

    def needed(cols: int) -> int:
        return rows * cols * BYTES_PER_CELL + chunks

    limit_mb = (needed(x.numel()) + needed(x.numel() + params)) / 2 / 2**20
    inputs_only = gradviz.check(module, x, max_memory_mb=limit_mb)
    assert inputs_only.passed and not inputs_only.result.large_blocks
    both = gradviz.check(module, x, parameters=True, max_memory_mb=limit_mb)
    assert both.passed == module_gradcheck_passes(module, x, ["weight", "bias"])
    assert both.result.large_blocks and any("Jacobians would take" in w for w in both.warnings)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_verdict_and_names_are_gradchecks():
    module, x = _net(HalfWeightFn)
    module, x = module.cuda(), x.detach().cuda().requires_grad_(True)
    before = _snapshot(module)
    report = gradviz.check(module, x, parameters=True, raise_exception=False)
    assert report.passed == module_gradcheck_passes(module, x, [n for n, _ in module.named_parameters()])
    assert not report.block(0, "layer.weight").passed and report.block(0, "x").passed
    for name, tensor in module.named_parameters():
        assert torch.equal(tensor, before[name]) and tensor.grad is None
