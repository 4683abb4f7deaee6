"""The vmap_rule check: a Function's own vmap rule (or a custom op's register_vmap) against plain calls.

Oracles, all PyTorch's: whether a rule is right is decided here by ``torch.func.vmap`` against a
Python loop of plain calls (forward, and ``torch.func.vjp`` under vmap); the verdict must stay
``torch.autograd.gradcheck``'s default one whatever the rule does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.cli.contract import ExitCode
from gradviz.core.vmap_rule import VMAP_RULE
from tests.real_world import vmap_functions as vf

SOURCE = Path(vf.__file__)
WITH_RULES = [vf.ScaleRule, vf.RowSumWrongRule, vf.WrongOutDims, vf.SinGenerated, vf.NumpyCube, vf.halve]


def name(fn) -> str:
    return getattr(fn, "__name__", None) or str(fn)


def x() -> torch.Tensor:
    return vf.example_inputs(torch.device("cpu"), torch.float64)[0]


def apply(fn):
    return fn.apply if isinstance(fn, type) else fn


def oracle_samples(x0: torch.Tensor) -> torch.Tensor:
    """The test's own batch: three samples near x0 (not gradviz's)."""
    return torch.stack([x0, x0 * 1.07, x0 * 0.93]).detach()


def rule_agrees_with_loop(fn) -> bool:
    """torch.func.vmap (which calls the rule) against a loop of plain calls, forward and backward."""
    f = apply(fn)
    batch = oracle_samples(x())
    try:
        batched = torch.func.vmap(f)(batch)
    except Exception:
        return False
    loop = torch.stack([f(s) for s in batch])
    if batched.shape != loop.shape or not torch.allclose(batched, loop):
        return False
    cot = torch.linspace(-1, 1, loop.numel(), dtype=loop.dtype).reshape(loop.shape)

    def vjp(a, v):
        return torch.func.vjp(f, a)[1](v)[0]

    grads = torch.func.vmap(vjp)(batch, cot)
    return torch.allclose(grads, torch.stack([vjp(a, v) for a, v in zip(batch, cot)]))


def vmap_outcome(report: gradviz.Report):
    return next((c for c in report.result.checks if c.name == VMAP_RULE), None)


@pytest.mark.parametrize("fn", WITH_RULES, ids=name)
def test_outcome_is_the_loops_and_the_verdict_stays_gradchecks(fn):
    report = gradviz.check(fn, x(), raise_exception=False)
    outcome = vmap_outcome(report)
    assert outcome is not None, "a Function with a vmap rule gets the check by default"
    assert (outcome.status == "passed") == rule_agrees_with_loop(fn), outcome.detail
    assert report.passed == torch.autograd.gradcheck(apply(fn), (x(),), raise_exception=False)
    assert not outcome.failed  # beyond gradcheck: a wrong rule warns, never fails the verdict
    assert outcome.to_dict()["status"] in ("passed", "warned")


def test_the_collection_has_right_and_wrong_rules():
    """Both outcomes are exercised, so the test above would catch a check that always passes."""
    found = {rule_agrees_with_loop(fn) for fn in WITH_RULES}
    assert found == {True, False}


def test_wrong_sample_and_output_are_named():
    """The op's rule is wrong in sample 1 only: the loop finds which sample and where."""
    report = gradviz.check(vf.halve, x(), raise_exception=False)
    outcome = vmap_outcome(report)
    batch = torch.stack([x().detach()] * 3)  # sample 1 is wrong whatever its values
    gap = (torch.func.vmap(vf.halve)(batch) - torch.stack([vf.halve(s) for s in batch])).abs()
    wrong = [b for b in range(3) if gap[b].max() > 0]
    assert wrong == [1]
    at = [int(v) for v in torch.unravel_index(gap[1].argmax(), gap[1].shape)]
    where = f"out0[{','.join(map(str, at))}]"
    assert (
        f"sample 1 of out0 differs from the plain call: max |diff| {float(gap[1].max()):.3g} at {where}"
        in (outcome.detail)
    )
    assert "gvtest_vmap::halve" in outcome.detail and "register_vmap" in outcome.detail


def test_numpy_backward_with_a_right_rule_fails_batched_grad_but_passes_vmap_rule():
    """gradcheck's check_batched_grad uses the prototype vmap, which never calls the rule."""
    report = gradviz.check(vf.NumpyCube, x(), raise_exception=False, check_batched_grad=True)
    verdict = torch.autograd.gradcheck(
        vf.NumpyCube.apply, (x(),), raise_exception=False, check_batched_grad=True
    )
    assert report.passed == verdict
    assert vmap_outcome(report).status == "passed" and rule_agrees_with_loop(vf.NumpyCube)


def test_no_rule_no_check_unless_asked():
    assert vmap_outcome(gradviz.check(vf.PlainSquare, x())) is None
    assert vmap_outcome(gradviz.check(vf.ScaleRule, x(), check_vmap_rule=False)) is None
    asked = vmap_outcome(gradviz.check(vf.PlainSquare, x(), check_vmap_rule=True))
    assert asked.status == "warned" and "raised" in asked.detail  # torch.func.vmap refuses it: said so


def test_cli_json_shows_the_check_and_keeps_the_verdict(cli):
    fn = vf.RowSumWrongRule
    expected = (
        ExitCode.PASS
        if torch.autograd.gradcheck(fn.apply, (x(),), raise_exception=False)
        else ExitCode.MISMATCH
    )
    out = cli("check", str(SOURCE), "--function", fn.__name__, "--json")
    assert out.returncode == expected, out.stderr
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert (
        checks[VMAP_RULE]["status"] == "warned"
        and "of out0 differs from the plain call" in checks[VMAP_RULE]["detail"]
    )
    off = cli("check", str(SOURCE), "--function", fn.__name__, "--no-vmap-rule", "--json")
    assert VMAP_RULE not in {c["name"] for c in json.loads(off.stdout)["checks"]}


def test_past_the_memory_limit_the_check_still_runs():
    """Jacobians too large to hold (searched by projections): the rule is still checked, same outcome."""
    report = gradviz.check(vf.RowSumWrongRule, x(), raise_exception=False, max_memory_mb=1e-4)
    assert report.result.large_blocks, "the check took the large-Jacobian path"
    assert vmap_outcome(report).status == (
        "passed" if rule_agrees_with_loop(vf.RowSumWrongRule) else "warned"
    )
    assert report.passed == torch.autograd.gradcheck(vf.RowSumWrongRule.apply, (x(),), raise_exception=False)


def test_notebook_shows_a_warned_rule_as_a_warning_not_a_failure():
    from gradviz.notebook import BAD, WARN

    html = gradviz.check(vf.RowSumWrongRule, x(), raise_exception=False)._repr_html_()
    line = next(part for part in html.split("<div>") if "vmap_rule: warned" in part)
    assert WARN in line and BAD not in line


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA paths run where a GPU is lent")
@pytest.mark.parametrize("fn", WITH_RULES, ids=name)
def test_on_cuda_the_outcome_is_the_cpu_one(fn):
    on_cpu = vmap_outcome(gradviz.check(fn, x(), raise_exception=False)).status
    on_cuda = gradviz.check(fn, x().detach().cuda().requires_grad_(), raise_exception=False)
    assert vmap_outcome(on_cuda).status == on_cpu
    assert on_cuda.passed == torch.autograd.gradcheck(
        apply(fn), (x().detach().cuda().requires_grad_(),), raise_exception=False
    )
