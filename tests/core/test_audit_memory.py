"""One memory limit for a whole audit: the captured copies and every kept node's Jacobians; a node
past what the earlier ones left takes the large-Jacobian path, with gradcheck's verdict all the
same; an audit whose least cannot fit is refused before any check; the nodes are checked with one
torch thread and the caller's count comes back."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.core.audit import audit_callable
from gradviz.core.audit_capture import capture_calls
from gradviz.core.large import BYTES_PER_CELL, held_bytes
from gradviz.schema.errors import ErrorKind, SizeLimitError
from gradviz.schema.settings import CheckSettings
from tests.core import audit_models
from tests.core.audit_oracle import record_calls


def _x() -> torch.Tensor:
    torch.manual_seed(1)
    return audit_models.example_inputs("cpu", torch.float64)[0]


def _cells(call) -> int:
    """Jacobian cells of a captured call: its outputs (as many as its first argument here) times its
    differentiated inputs."""
    rows = call.args[0].numel()
    return rows * sum(call.args[j].numel() for j in call.differentiated)


def test_the_second_node_takes_the_projections_when_the_first_used_the_limit():
    model, x = audit_models.TwoNorms(), _x()
    first, second = capture_calls(model, (x,)).calls
    held = first.in_bytes + second.in_bytes
    chunk = CheckSettings().chunk_bytes
    # room for the first node's full check, and after it keeps its Jacobians, less than the second's
    limit = held + _cells(first) * BYTES_PER_CELL + held_bytes(_cells(first), chunk)
    assert held_bytes(_cells(second), chunk) > limit - held - _cells(first) * BYTES_PER_CELL
    audit = audit_callable(model, (x,), CheckSettings(max_jacobian_bytes=limit), name="TwoNorms")
    one, two = (node.result for node in audit.nodes)
    assert one.blocks and not one.large_blocks  # held
    assert two.large_blocks and not two.blocks  # searched
    oracle = [c.gradcheck() for c in record_calls(model, x)]
    assert [node.status == "passed" for node in audit.nodes] == oracle == [True, False]
    report = gradviz.audit(model, x, max_memory_mb=limit / 2**20)  # the library budgets the same way
    assert [bool(n.report.result.blocks) for n in report.nodes] == [True, False]
    assert [n.passed for n in report.nodes] == oracle


def test_an_audit_whose_least_cannot_fit_is_refused_before_any_check():
    model, x = audit_models.TwoNorms(), _x()
    calls = capture_calls(model, (x,)).calls
    least = sum(c.in_bytes for c in calls) + max(c.out_bytes for c in calls)
    assert least == sum(c.in_bytes for c in calls) + x.numel() * x.element_size()  # rest's output, x's size
    progress: list[tuple[int, int]] = []
    with pytest.raises(SizeLimitError) as refused:
        audit_callable(
            model, (x,), CheckSettings(max_jacobian_bytes=least - 1), name="TwoNorms",
            progress=lambda done, total: progress.append((done, total)),
        )  # fmt: skip
    assert refused.value.kind == ErrorKind.SIZE_LIMIT and progress == []
    message = refused.value.message
    assert message.startswith("Too large to audit: checking rest → BadRMSNormFn, call 2 of 2 needs at least")
    assert "\n" not in message and "more than the memory limit of" in message
    with pytest.raises(gradviz.GradvizError, match="Too large to audit"):
        gradviz.audit(model, x, max_memory_mb=(least - 1) / 2**20)
    fits = audit_callable(model, (x,), CheckSettings(max_jacobian_bytes=least), name="TwoNorms")
    assert [n.status == "passed" for n in fits.nodes] == [c.gradcheck() for c in record_calls(model, x)]


SEEN: list[int] = []  # torch's thread count at each forward of ThreadsSeen


class ThreadsSeen(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        SEEN.append(torch.get_num_threads())
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3


def threes(x):
    return ThreadsSeen.apply(x)


def test_nodes_are_checked_with_one_thread_and_the_callers_count_comes_back():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        SEEN.clear()
        audit_callable(threes, (x,), CheckSettings(), name="threads")
        assert SEEN[0] == 2 and set(SEEN[1:]) == {1}  # the model's forward, the checks
        assert torch.get_num_threads() == 2
        SEEN.clear()
        assert gradviz.audit(threes, x)
        assert SEEN[0] == 2 and set(SEEN[1:]) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
