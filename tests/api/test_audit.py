"""gradviz.audit: each node's verdict is torch.autograd.gradcheck's on that Function or op at the
inputs the model really passed it (the oracle records them itself, see tests/core/audit_oracle)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import gradviz
from tests.core import audit_models
from tests.core.audit_oracle import record_calls


def _x() -> torch.Tensor:
    torch.manual_seed(1)
    return audit_models.example_inputs("cpu", torch.float64)[0]


def _assert_matches_oracle(model, x, **options) -> gradviz.AuditReport:
    report = gradviz.audit(model, x, **options)
    oracle = [c for c in record_calls(model, x) if c.differentiated]
    checked = [n for n in report.nodes if n.report is not None]
    assert [n.function for n in checked] == [c.name for c in oracle]
    assert [n.passed for n in checked] == [c.gradcheck(**options) for c in oracle]
    assert report.passed == all(n.passed for n in checked) == bool(report)
    return report


def test_correct_transformer_passes_every_node():
    report = _assert_matches_oracle(audit_models.transformer(), _x())
    assert report.passed and len(report.nodes) == 11
    assert {n.function for n in report.nodes} == {"RMSNormFn", "AttentionFn", "LeakyCapFn", "gvaudit::matmul"}


def test_capped_bug_hides_at_randn_and_shows_in_the_head():
    torch.manual_seed(0)
    at_randn = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(audit_models.BadLeakyCapFn.apply, (at_randn,), raise_exception=False)
    assert gradviz.check(audit_models.BadLeakyCapFn, at_randn).passed
    report = _assert_matches_oracle(audit_models.capped_twin(), _x())
    assert not report
    assert [(n.module, n.function, n.call, n.calls) for n in report.failing] == [("head.act", "BadLeakyCapFn", 2, 2)]
    first = next(n for n in report.nodes if n.function == "BadLeakyCapFn")
    assert first.passed and first.module == "block.mlp.act"
    assert "head.act → BadLeakyCapFn, call 2 of 2: out0[" in report.message()


def test_row_bug_fails_only_the_second_call_with_more_rows():
    report = _assert_matches_oracle(audit_models.TwoNorms(), _x())
    assert [(n.module, n.call, n.passed) for n in report.nodes] == [("first", 1, True), ("rest", 2, False)]
    failing = report.nodes[1].report
    assert all(c.label.split(" / ")[1].startswith("weight") for c in failing.failing_cells)


def test_conv_net_with_the_fused_conv_bn_function_twice():
    torch.manual_seed(2)
    x = audit_models.image()
    report = _assert_matches_oracle(audit_models.conv_net(), x)
    assert report.passed
    assert [(n.module, n.function, n.call) for n in report.nodes] == [
        ("conv1", "FusedConvBN2DFunction", 1),
        ("act", "SoftplusFn", 1),
        ("conv2", "FusedConvBN2DFunction", 2),
    ]


def test_negative_branch_bug_hides_at_rand_and_shows_after_batch_norm():
    torch.manual_seed(0)
    positive = torch.rand(4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(audit_models.BadSoftplusFn.apply, (positive,), raise_exception=False)
    torch.manual_seed(2)
    report = _assert_matches_oracle(audit_models.conv_net(audit_models.BadSoftplusFn), audit_models.image())
    assert [n.module for n in report.failing] == ["act"]


def test_options_reach_every_node_as_gradcheck_options():
    _assert_matches_oracle(audit_models.capped_twin(), _x(), atol=1.0, rtol=0.0)  # 0.9 errors within atol=1
    _assert_matches_oracle(audit_models.capped_twin(), _x(), fast_mode=True)


def test_large_node_goes_through_the_large_jacobian_path():
    model = audit_models.TwoNorms()
    report = gradviz.audit(model, _x(), max_memory_mb=0.001)
    oracle = [c.gradcheck() for c in record_calls(model, _x())]
    assert [n.passed for n in report.nodes] == oracle
    assert report.nodes[1].report.result.large_blocks  # searched, not held
    assert "weight" in report.message()


def test_inputs_and_model_come_back_unchanged():
    model, x = audit_models.capped_twin(), _x()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    copy = x.detach().clone()
    gradviz.audit(model, x)
    assert torch.equal(x, copy) and x.requires_grad and x.grad is None
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in weights.items())
    assert all(p.grad is None for p in model.parameters())


def test_save_writes_the_summary_and_a_reproducer_gradcheck_confirms(tmp_path):
    report = gradviz.audit(audit_models.capped_twin(), _x())
    written = report.save(tmp_path)
    assert tmp_path / "audit.json" in written
    scripts = sorted(tmp_path.glob("*/reproducer.py"))
    assert [p.parent.name for p in scripts] == ["011_head.act_BadLeakyCapFn_call2"]
    run = subprocess.run([sys.executable, str(scripts[0])], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "gradcheck FAILED" in run.stdout
    assert "BadLeakyCapFn" in report._repr_html_()
    with pytest.raises(FileExistsError):
        report.save(tmp_path)


def test_op_node_reproducer_runs_gradcheck_on_the_op_alone():
    report = gradviz.audit(audit_models.transformer(), _x())
    op = next(n for n in report.nodes if n.function == "gvaudit::matmul")
    script = op.reproducer()
    assert "import matmul" in script and "opcheck" not in script


def test_repeated_calls_share_one_check_and_max_checks_limits_the_distinct_ones():
    torch.manual_seed(0)
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    report = gradviz.audit(lambda t: [audit_models.BadLeakyCapFn.apply(t) for _ in range(500)], x * 2)
    assert len(report.nodes) == 500 and report.nodes[-1].call == 500 and report.nodes[-1].calls == 500
    assert all(n.report is report.nodes[0].report for n in report.nodes)
    assert [n.node.same_as for n in report.nodes[1:]] == [1] * 499
    assert "499 call(s) had exactly the inputs of an earlier call" in " ".join(report.result.notes)
    at = ((x * 2).detach().requires_grad_(),)
    assert report.passed == torch.autograd.gradcheck(audit_models.BadLeakyCapFn.apply, at, raise_exception=False)

    def scaled(t):
        return [audit_models.BadLeakyCapFn.apply(t * (k + 1)) for k in range(6)]

    full = gradviz.audit(scaled, x)
    oracle = [c.gradcheck() for c in _recorded_scaled(scaled, x)]
    assert [n.passed for n in full.nodes] == oracle and oracle[0] and not all(oracle)  # x * 6 is past the cap
    limited = gradviz.audit(scaled, x, max_checks=2)
    assert [n.passed for n in limited.nodes[:2]] == oracle[:2]
    assert [n.status for n in limited.nodes[2:]] == ["not checked"] * 4
    assert "past the limit of 2 distinct call(s)" in limited.nodes[2].reason


def _recorded_scaled(fn, x):
    calls = []
    apply = audit_models.BadLeakyCapFn.apply
    with pytest.MonkeyPatch.context() as patch:
        def recording(t):
            calls.append(t.detach().clone().requires_grad_(t.requires_grad))
            return apply(t)

        patch.setattr(audit_models.BadLeakyCapFn, "apply", recording)
        fn(x)
    return [_Call(apply, (c,)) for c in calls]


class _Call:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def gradcheck(self):
        return torch.autograd.gradcheck(self.fn, self.args, raise_exception=False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_audit_on_cuda_matches_gradcheck():
    model = audit_models.capped_twin().cuda()
    report = _assert_matches_oracle(model, _x().cuda())
    assert [n.module for n in report.failing] == ["head.act"]
    assert all(n.report.result.device.startswith("cuda") for n in report.nodes)
