"""One diagnosis per failing block: hints, warnings, kink marks and the eps sweep tell the same
story on the patterns that invite them to contradict each other.

Each Function lives in ``tests/real_world/hint_patterns.py``. The verdict stays gradcheck's
(computed here with ``torch.autograd.gradcheck``); only the explanation is tested.
"""

from __future__ import annotations

import json

import pytest
import torch

import gradviz
from gradviz.schema.sweep import Verdict
from tests.cli.runner import gradviz as run_cli
from tests.real_world import hint_patterns as hp
from tests.real_world import oracle

PATTERNS = "tests/real_world/hint_patterns.py"
# what a channel says when it blames the backward, and when it clears it
BLAME = ("backward is wrong", "real bug", "a term is missing or wrong", "mask or slice is missing", "at a kink of")
CLEAR = ("not your backward", "not the backward", "backward is right", "cannot validate", "not deterministic")
RIGHT_SWEEPS = (Verdict.BACKWARD_RIGHT, Verdict.EPS_TOO_SMALL, Verdict.EPS_TOO_LARGE, Verdict.PRECISION)


def inputs(dtype: torch.dtype) -> torch.Tensor:
    return hp.example_inputs("cpu", dtype)[0]


def gradcheck_passes(fn, x: torch.Tensor) -> bool:
    """PyTorch's own verdict, with gradcheck's defaults, on a copy of ``x``."""
    # quiet: "not double precision" is gradcheck's own advice, expected here
    return oracle.gradcheck_passes(fn.apply, (x.detach().clone().requires_grad_(True),), quiet=True, failing_on=(RuntimeError,))


def says(texts: list[str], phrases: tuple[str, ...]) -> list[str]:
    return [t for t in texts if any(p in t for p in phrases)]


def check(fn, x: torch.Tensor) -> gradviz.Report:
    report = gradviz.check(fn, x, raise_exception=False)
    assert report.passed == gradcheck_passes(fn, x)
    return report


def assert_not_the_backward(report: gradviz.Report) -> None:
    """Every channel clears the backward: no hint, warning or kink mark blames it."""
    assert report.hints and len(says(report.hints, CLEAR)) == len(report.hints), report.hints
    assert not says(report.hints + report.warnings, BLAME), report.hints + report.warnings
    assert sum(b.n_kinks for b in report.blocks) == 0


def assert_backward_wrong(report: gradviz.Report) -> None:
    """Every channel blames the backward; no kink marks the noise."""
    assert says(report.hints, ("backward is wrong",)), report.hints
    assert not says(report.hints + report.warnings, CLEAR), report.hints + report.warnings
    assert sum(b.n_kinks for b in report.blocks) == 0


def test_float32_round_off_of_a_right_backward_is_not_called_a_missing_term():
    report = check(hp.Cube, inputs(torch.float32))
    assert not report.passed  # gradcheck fails it too: eps=1e-6 in float32
    assert_not_the_backward(report)
    assert says(report.warnings, ("Fails only in float32",))
    assert all("float32 round-off" in h for h in report.hints)
    assert report.sweep().verdict in RIGHT_SWEEPS


def test_float32_wrong_backward_is_still_called_wrong():
    report = check(hp.CubeWrong, inputs(torch.float32))
    assert not report.passed
    assert_backward_wrong(report)
    assert says(report.warnings, ("Fails in float64 too",))
    assert report.sweep().verdict == Verdict.BACKWARD_WRONG


def test_float32_inside_a_float64_forward_is_not_read_as_kinks():
    x = inputs(torch.float64)
    report = check(hp.SinViaFloat32Wrong, x)
    assert not report.passed and report.blocks[0].n_failing
    assert_backward_wrong(report)
    assert says(report.warnings, ("rounds like float32",)) and says(report.warnings, ("real bug",))
    assert report.sweep().verdict == Verdict.BACKWARD_WRONG


def test_float32_inside_a_right_backward_blames_the_forward_noise():
    report = check(hp.SinViaFloat32, inputs(torch.float64))
    assert not report.passed
    assert_not_the_backward(report)
    assert all("computes in float32 inside" in h for h in report.hints)
    assert says(report.warnings, ("forward's float32 internals, not your backward",))
    assert report.sweep().verdict in RIGHT_SWEEPS


@pytest.mark.parametrize("fn", [hp.RoundSTE, hp.FloorSTE, hp.ClippedSignSTE], ids=lambda f: f.__name__)
def test_straight_through_estimators_are_piecewise_constant_not_a_missing_mask(fn):
    report = check(fn, inputs(torch.float64))
    assert not report.passed  # gradcheck's FAIL stays: only the diagnosis changes
    assert_not_the_backward(report)
    assert all("piecewise constant" in h and "Finite differences cannot validate" in h for h in report.hints)
    assert not says(report.hints, ("mask",))
    sweep = report.sweep()
    assert sweep.verdict == Verdict.NON_DIFFERENTIABLE and "piecewise constant" in sweep.message
    assert sweep.best_eps is None


def test_a_random_forward_is_said_to_be_random_not_a_wrong_backward():
    report = check(hp.NoisyScale, inputs(torch.float64))
    assert not report.passed
    assert_not_the_backward(report)
    assert says(report.warnings, ("forward is not deterministic",))


def test_cli_json_tells_one_story_with_the_sweep():
    """The float32-inside Function with a wrong backward, through the real command line."""
    out = run_cli("check", PATTERNS, "--function", "SinViaFloat32Wrong", "--sweep", "--json")
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["passed"] is gradcheck_passes(hp.SinViaFloat32Wrong, inputs(torch.float64))
    block = data["blocks"][0]
    assert block["failing"] > 0 and block["kinks"] == 0
    assert any("backward is wrong" in h for h in block["hints"])
    assert not says(block["hints"] + data["warnings"], CLEAR)
    assert data["sweep"]["verdict"] == "backward_wrong" and block["sweep"]["verdict"] == "backward_wrong"


def test_kinks_and_forward_round_off_together_clear_the_backward():
    """Cells at relu's kink fail at every eps; the others only from float32 round-off inside."""
    x = hp.relu_inputs("cpu", torch.float64)[0]
    report = check(hp.ReluViaFloat32, x)
    assert not report.passed
    block = report.blocks[0]
    assert 0 < block.n_kinks < block.n_failing
    assert not says(report.hints + report.warnings, ("backward is wrong", "real bug", "a term is missing"))
    assert says(report.hints, ("at a kink of the forward",)) and says(report.warnings, ("not your backward",))
    assert report.sweep().verdict == Verdict.NON_DIFFERENTIABLE


class Relu(torch.autograd.Function):
    """A right backward: relu's derivative, 1 where x > 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_kink_within_eps_of_an_input_is_a_kink_not_a_real_bug(dtype):
    """Entries 2e-7 and -3e-7 from relu's kink, eps=1e-6: the central difference straddles it.

    At d = 0.3·eps the one-sided gap at eps and eps/2 halves as a smooth function's would; only the
    third step (eps/4) tells them apart. Before, both cells were called "a real bug in the backward".
    """
    x = torch.linspace(-0.5, 0.5, 10, dtype=torch.float64)
    x[3], x[7] = 2e-7, -3e-7
    report = check(Relu, x.to(dtype).requires_grad_())
    assert not report.passed
    near = {3, 7}
    block = report.blocks[0]
    assert {int(c) for c in block.kinks.nonzero()[0]} >= near
    assert not says(report.hints + report.warnings, ("backward is wrong", "real bug", "a term is missing"))
    if dtype == torch.float32:  # the float64 re-check fails at the kinks only, and says so everywhere
        assert report.result.precision.verdict == "kinks_only"
        assert report.result.precision.message in report.warnings


class CountedRound(torch.autograd.Function):
    """A straight-through round that also counts its calls in place, in a tensor needing no gradient."""

    @staticmethod
    def forward(ctx, x, calls):
        calls += 1
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def test_the_diagnosis_probes_leave_the_callers_tensors_alone():
    """The piecewise-constant and round-off probes call the forward on copies of every input, not
    only of the one they move: before, this check left the caller's counter at 18."""
    x = torch.linspace(-1, 1, 7, dtype=torch.float64).requires_grad_()
    calls = torch.zeros(1)
    before = calls.clone()
    report = gradviz.check(CountedRound.apply, (x, calls), raise_exception=False)
    expected = oracle.gradcheck_passes(CountedRound.apply, (x, calls), copies=True, quiet=True)
    assert report.passed == expected
    assert says(report.hints, ("piecewise constant",))  # the probes did run
    assert torch.equal(calls, before)
