"""capture_calls records every custom call of one forward, where and how the model made it,
and leaves the model, its inputs and every random generator as they were."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn

from gradviz.core.audit import NoCustomNode, NothingToAudit, audit_callable, capture_or_refuse
from gradviz.core.audit_capture import capture_calls
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import CheckSettings
from tests.core import audit_models
from tests.core.audit_oracle import record_calls


def _x() -> torch.Tensor:
    torch.manual_seed(1)
    return audit_models.example_inputs("cpu", torch.float64)[0]


def test_every_call_recorded_as_the_oracle_records_it():
    model, x = audit_models.transformer(), _x()
    captured = capture_calls(model, (x,)).calls
    oracle = record_calls(model, x)
    assert [c.function for c in captured] == [o.name for o in oracle]
    for c, o in zip(captured, oracle):
        assert len(c.args) == len(o.args)
        for a, b in zip(c.args, o.args):
            if isinstance(b, torch.Tensor):
                assert torch.equal(a, b) and a.requires_grad == b.requires_grad and a.stride() == b.stride()
            else:
                assert a == b


def test_module_paths_and_call_numbers():
    calls = capture_calls(audit_models.transformer(), (_x(),)).calls
    where = [(c.module, c.function, c.call, c.calls) for c in calls]
    assert where[0] == ("block.norm1", "RMSNormFn", 1, 2)
    assert ("block.attn", "AttentionFn", 1, 1) in where
    assert where[-1] == ("head.act", "LeakyCapFn", 2, 2)
    ops = [c for c in calls if c.function == "gvaudit::matmul"]
    assert [c.module for c in ops] == [f"block.attn.{p}" for p in "qkvo"] + ["block.mlp.up", "block.mlp.down"]
    assert [c.call for c in ops] == list(range(1, 7))  # the op's own autograd Function is not a second node


class Inner(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class Outer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return Inner.apply(x) + 1

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_nested_call_recorded_but_not_differentiated():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    calls = capture_calls(lambda t: Outer.apply(t), (x,)).calls
    assert [(c.function, c.grad_enabled, c.differentiated) for c in calls] == [
        ("Outer", True, [0]),
        ("Inner", False, []),
    ]
    result = audit_callable(lambda t: Outer.apply(t), (x,), CheckSettings(), name="outer")
    inner = result.nodes[1]
    assert inner.status == "not checked" and "not recording" in inner.reason
    assert result.nodes[0].status == "passed"


class Restless(nn.Module):
    """Train mode, batch norm (its running stats move), dropout (it draws), a mode switch inside."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(4).double()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        y = self.drop(self.norm(x))
        self.norm.eval()
        random.random(), np.random.rand()
        return audit_models.LeakyCapFn.apply(y)


def test_model_state_and_generators_come_back_bitwise():
    model = Restless().train()
    with torch.no_grad():
        model.norm.running_mean.fill_(-0.0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(5, 4, dtype=torch.float64)
    rng, py, npy = torch.get_rng_state(), random.getstate(), np.random.get_state()
    calls = capture_calls(model, (x,)).calls
    assert [c.function for c in calls] == ["LeakyCapFn"]
    after = model.state_dict()
    for k, v in before.items():
        assert torch.equal(v.view(torch.uint8) if v.is_floating_point() else v, after[k].view(torch.uint8) if v.is_floating_point() else after[k])
    assert model.training and model.norm.training
    assert torch.equal(rng, torch.get_rng_state()) and py == random.getstate()
    assert np.array_equal(npy[1], np.random.get_state()[1])


def test_forward_that_raises_names_its_line_and_restores_apply():
    class Broken(nn.Module):
        def forward(self, x):
            audit_models.LeakyCapFn.apply(x)
            raise ValueError("shapes do not match")

    original = torch.autograd.function.Function.__dict__["apply"]
    with pytest.raises(UserCodeError) as caught:
        capture_calls(Broken(), (torch.randn(2),))
    assert "ValueError: shapes do not match" in caught.value.message
    assert caught.value.lineno is not None
    assert torch.autograd.function.Function.__dict__["apply"] is original


def test_no_custom_node_is_one_clear_error():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh()).double()
    with pytest.raises(NoCustomNode, match=r"calls no custom torch\.autograd\.Function"):
        capture_or_refuse(model, (torch.randn(2, 3, dtype=torch.float64),), "Sequential")


def test_op_called_on_constants_is_listed_not_checked():
    a = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 2, dtype=torch.float64)

    def fn(p, q):
        return audit_models.LeakyCapFn.apply(audit_models.matmul(q.T, q) + audit_models.matmul(p, q).sum())

    result = audit_callable(fn, (a, b), CheckSettings(), name="consts")
    assert [(n.function, n.status) for n in result.nodes] == [
        ("gvaudit::matmul", "not checked"),
        ("gvaudit::matmul", "passed"),
        ("LeakyCapFn", "passed"),
    ]
    assert "required grad" in result.nodes[0].reason
    with pytest.raises(NothingToAudit, match="none of consts's 1 custom node"):
        audit_callable(audit_models.matmul, (a.detach(), b), CheckSettings(), name="consts")


@torch.library.custom_op("gvaudit::capped", mutates_args=())
def capped(x: torch.Tensor) -> torch.Tensor:
    """An op whose own code calls a Function: autograd differentiates the op, never that call."""
    return audit_models.LeakyCapFn.apply(x).clone()


capped.register_autograd(
    lambda ctx, g: g * torch.where(ctx.saved_tensors[0].abs() <= audit_models.CAP, 1.0, audit_models.LEAK),
    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs),
)


def test_function_called_inside_a_custom_op_is_not_differentiated_there():
    x = torch.randn(4, dtype=torch.float64, requires_grad=True) * 4
    result = audit_callable(capped, (x,), CheckSettings(), name="capped")
    assert [(n.function, n.status) for n in result.nodes] == [("gvaudit::capped", "passed"), ("LeakyCapFn", "not checked")]
    assert "custom op" in result.nodes[1].reason
    assert torch.autograd.gradcheck(capped, (x.detach().requires_grad_(),), raise_exception=False)


class SparseMixFn(torch.autograd.Function):
    """adjacency @ x with a fixed sparse adjacency (a graph layer's aggregation)."""

    @staticmethod
    def forward(ctx, adjacency, x):
        ctx.save_for_backward(adjacency)
        return torch.sparse.mm(adjacency, x)

    @staticmethod
    def backward(ctx, grad):
        (adjacency,) = ctx.saved_tensors
        return None, torch.sparse.mm(adjacency.t(), grad)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")  # torch's own, from gradcheck
def test_sparse_constant_argument_is_passed_as_it_was():
    adjacency = (torch.rand(4, 4, dtype=torch.float64) > 0.5).double().to_sparse()
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    fn = lambda a, t: [SparseMixFn.apply(a, t), SparseMixFn.apply(a, t)]  # noqa: E731
    result = audit_callable(fn, (adjacency, x), CheckSettings(), name="mix")
    assert [n.status for n in result.nodes] == ["passed", "passed"]
    copy = capture_calls(fn, (adjacency, x)).calls[0].args[0]
    assert copy.layout == torch.sparse_coo and torch.equal(copy.to_dense(), adjacency.to_dense())
    assert torch.autograd.gradcheck(SparseMixFn.apply, (adjacency, x.detach().requires_grad_()), raise_exception=False)
