"""Forward mode: the verdict is gradcheck(check_forward_ad=True)'s, the forward
Jacobian is torch.func.jacfwd's, and a missing forward formula is said by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as fwAD

import gradviz
from gradviz.core.forward_jacobian import BATCHED_FORWARD_GRAD, FORWARD_AD, UNDEFINED_FORWARD
from tests.paths import ROOT
from tests.real_world import jvp_functions as jf
from tests.real_world.oracle import gradcheck_passes

ONE_INPUT = [
    jf.SinJvp,
    jf.SinWrongJvp,
    jf.SinNoJvp,
    jf.SinRightJvpWrongBackward,
    jf.CubeSetupContext,
    jf.CubeSetupContextWrongJvp,
    jf.NumpyJvp,
    jf.sin_no_forward,
]
TWO_INPUTS = [jf.MulAdd, jf.MulAddWrongJvp]
MODES = [
    {},
    {"check_backward_ad": False},
    {"check_batched_forward_grad": True},
]


def _apply(fn):
    return getattr(fn, "apply", fn)


def _name(fn) -> str:
    return getattr(fn, "__name__", None) or str(fn)


def gradcheck_verdict(fn, args, **options) -> bool:
    """torch.autograd.gradcheck's verdict; an exception it raises (no jvp) is a failure too."""
    return gradcheck_passes(_apply(fn), tuple(args), copies=True, quiet=True, failing_on=(Exception,), **options)


def _args(fn, device="cpu"):
    torch.manual_seed(0)
    return jf.two_inputs(device) if fn in TWO_INPUTS else jf.example_inputs(device)


@pytest.mark.parametrize("options", MODES, ids=lambda o: ",".join(o) or "forward")
@pytest.mark.parametrize("fn", ONE_INPUT + TWO_INPUTS, ids=_name)
def test_verdict_equals_gradcheck_with_check_forward_ad(fn, options):
    args = _args(fn)
    expected = gradcheck_verdict(fn, args, check_forward_ad=True, **options)
    report = gradviz.check(fn, args, check_forward_ad=True, raise_exception=False, **options)
    assert report.passed == expected, report
    if FORWARD_AD not in [c.name for c in report.checks]:
        outputs = [o.index for o in report.result.outputs if o.requires_grad]
        assert set(report.forward) == {(i, j) for i in outputs for j in range(len(args))}
    if options.get("check_backward_ad") is False:
        assert report.blocks == []  # the backward is not run: forward mode alone decides


@pytest.mark.parametrize("fn", [jf.SinWrongJvp, jf.CubeSetupContextWrongJvp, jf.MulAddWrongJvp], ids=_name)
def test_a_wrong_jvp_passes_gradcheck_by_default_and_fails_in_forward_mode(fn):
    args = _args(fn)
    assert gradcheck_verdict(fn, args)  # the default gradcheck checks the backward only
    assert not gradcheck_verdict(fn, args, check_forward_ad=True)
    assert gradviz.check(fn, args).passed
    report = gradviz.check(fn, args, check_forward_ad=True, raise_exception=False)
    assert not report.passed
    assert all(b.passed for b in report.blocks)  # the backward is right
    failing = [(b.output, b.input) for b in report.result.forward_blocks if not b.passed]
    assert failing
    if fn is jf.MulAddWrongJvp:  # only the second output's tangent in y is wrong
        assert failing == [(1, 1)]
    wrong = report.result.forward_block(*failing[0])
    assert any("jvp) is wrong here" in h for h in wrong.hints)
    assert "forward" in str(report).lower()


@pytest.mark.parametrize(
    ("fn", "many"),
    [
        (jf.CubeSetupContext, False),
        (jf.CubeSetupContextWrongJvp, False),
        (jf.MulAdd, True),
        (jf.MulAddWrongJvp, True),
        (lambda x, y: (x.sin() * y, (x @ y.T).exp()), True),
    ],
    ids=["cube", "cube_wrong_jvp", "muladd", "muladd_wrong_jvp", "torch_ops"],
)
def test_forward_jacobian_equals_jacfwd(fn, many):
    args = jf.two_inputs() if many else jf.example_inputs()
    report = gradviz.check(fn, args, check_forward_ad=True, raise_exception=False)
    outputs = fn(*args) if not isinstance(fn, type) else fn.apply(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    jac = torch.func.jacfwd(_apply(fn), argnums=tuple(range(len(args))))(*args)
    jac = jac if isinstance(jac, tuple) and isinstance(jac[0], tuple) else (jac,)
    assert report.result.forward_blocks
    for block in report.result.forward_blocks:
        expected = jac[block.output][block.input].reshape(outputs[block.output].numel(), args[block.input].numel())
        np.testing.assert_allclose(block.analytic, expected.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_a_function_without_jvp_is_said_by_name_not_a_crash():
    args = jf.example_inputs()
    with pytest.raises(NotImplementedError, match="jvp"):  # what gradcheck does
        torch.autograd.gradcheck(jf.SinNoJvp.apply, args, check_forward_ad=True, raise_exception=False)
    report = gradviz.check(jf.SinNoJvp, args, check_forward_ad=True, raise_exception=False)
    assert not report.passed
    (outcome,) = [c for c in report.checks if c.name == FORWARD_AD]
    assert outcome.failed and "SinNoJvp has no jvp" in outcome.detail
    assert all(b.passed for b in report.blocks)  # the backward is still checked and shown
    assert FORWARD_AD in report.message()


def test_a_custom_op_without_forward_formula_gets_no_tangent_and_is_named():
    args = jf.example_inputs()
    with fwAD.dual_level():  # what torch does: the output carries no tangent at all (torch 2.13)
        out = jf.sin_no_forward(fwAD.make_dual(args[0].detach(), torch.ones_like(args[0])))
        assert fwAD.unpack_dual(out).tangent is None
    expected = gradcheck_verdict(jf.sin_no_forward, args, check_forward_ad=True)
    report = gradviz.check(jf.sin_no_forward, args, check_forward_ad=True, raise_exception=False)
    assert report.passed == expected
    said = [w for w in report.warnings if "has no forward-mode formula (jvp): its tangent is zero" in w]
    assert len(said) == 1
    (block,) = report.result.forward_blocks
    assert not block.analytic.any() and block.numerical.any()
    assert block.hints and "no forward-mode formula" in block.hints[0]
    assert all(b.passed for b in report.blocks)


def test_a_jvp_that_returns_zero_is_told_apart_from_a_missing_formula():
    class ZeroJvp(jf.SinJvp):
        @staticmethod
        def jvp(ctx, tangent):
            return torch.zeros_like(tangent)

    report = gradviz.check(ZeroJvp, jf.example_inputs(), check_forward_ad=True, raise_exception=False)
    assert not report.passed
    assert any("jvp returns a zero tangent" in w for w in report.warnings)
    assert not any("no forward-mode formula" in w for w in report.warnings)


def test_batched_forward_grad_is_a_named_check_with_gradchecks_verdict():
    args = jf.example_inputs()
    assert gradcheck_verdict(jf.NumpyJvp, args, check_forward_ad=True)
    assert not gradcheck_verdict(jf.NumpyJvp, args, check_forward_ad=True, check_batched_forward_grad=True)
    plain = gradviz.check(jf.NumpyJvp, args, check_forward_ad=True)
    assert BATCHED_FORWARD_GRAD not in [c.name for c in plain.checks]
    report = gradviz.check(
        jf.NumpyJvp, args, check_forward_ad=True, check_batched_forward_grad=True, raise_exception=False
    )
    (outcome,) = [c for c in report.checks if c.name == BATCHED_FORWARD_GRAD]
    assert outcome.failed and not report.passed
    assert all(b.passed for b in report.result.forward_blocks)  # column by column the jvp is right


def test_check_undefined_grad_false_drops_the_forward_undefined_test_too():
    args = jf.example_inputs()
    names = [c.name for c in gradviz.check(jf.SinJvp, args, check_forward_ad=True).checks]
    assert UNDEFINED_FORWARD in names
    names = [c.name for c in gradviz.check(jf.SinJvp, args, check_forward_ad=True, check_undefined_grad=False).checks]
    assert UNDEFINED_FORWARD not in names


def test_forward_mode_leaves_the_inputs_and_the_rng_alone():
    args = jf.example_inputs()
    before = [a.detach().clone() for a in args]
    state = torch.random.get_rng_state()
    gradviz.check(jf.SinJvp, args, check_forward_ad=True, check_batched_forward_grad=True)
    assert torch.equal(torch.random.get_rng_state(), state)
    for a, b in zip(args, before):
        assert torch.equal(a.detach(), b) and a.requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("fn", [jf.SinJvp, jf.SinWrongJvp, jf.MulAddWrongJvp, jf.sin_no_forward], ids=_name)
def test_forward_mode_on_cuda_equals_gradcheck(fn):
    args = _args(fn, "cuda")
    for options in MODES:
        expected = gradcheck_verdict(fn, args, check_forward_ad=True, **options)
        report = gradviz.check(fn, args, check_forward_ad=True, raise_exception=False, **options)
        assert report.passed == expected, (options, str(report))
        assert report.result.device.startswith("cuda")


def test_the_report_shows_forward_blocks_in_text_message_json_and_html():
    args = jf.two_inputs()
    report = gradviz.check(jf.MulAddWrongJvp, args, check_forward_ad=True, raise_exception=False)
    (wrong,) = [b for b in report.forward_blocks if not b.passed]
    label = report.result.cell_label(wrong, *wrong.worst)
    text = str(report)
    assert "forward mode (jvp / forward AD) against numerical" in text
    assert label in text and "forward-mode cells outside tolerance" in text
    assert label in report.message() and "Forward mode" in report.message()
    assert "forward-mode" in repr(report)
    data = report.to_dict()
    assert [(b["output"], b["input"], b["failing"]) for b in data["forward_blocks"]] == [
        (b.output, b.input, b.n_failing) for b in report.forward_blocks
    ]
    assert "forward-mode block" in report._repr_html_()
    np.testing.assert_array_equal(report.forward[wrong.output, wrong.input], wrong.analytic)


def test_the_reproducer_runs_gradcheck_with_check_forward_ad(tmp_path):
    report = gradviz.check(jf.SinWrongJvp, jf.example_inputs(), check_forward_ad=True, raise_exception=False)
    script = tmp_path / "reproducer.py"
    script.write_text(report.reproducer(), encoding="utf-8")
    root = str(ROOT)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": root}, timeout=300
    )
    assert "check_forward_ad=True" in script.read_text(encoding="utf-8")
    assert out.returncode == 1, out.stderr  # gradcheck itself fails the wrong jvp


def test_report_save_keeps_the_forward_arrays(tmp_path):
    report = gradviz.check(jf.MulAddWrongJvp, jf.two_inputs(), check_forward_ad=True, raise_exception=False)
    report.save(tmp_path)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    with np.load(tmp_path / "report.npz", allow_pickle=False) as npz:
        for entry, block in zip(data["forward_blocks"], report.forward_blocks):
            np.testing.assert_array_equal(npz[entry["arrays"]["analytic"]], block.analytic)
            np.testing.assert_array_equal(npz[entry["arrays"]["numerical"]], block.numerical)


@pytest.mark.parametrize("fn", [jf.SinJvp, jf.SinWrongJvp, jf.SinNoJvp], ids=_name)
def test_jacobians_too_large_to_hold_keep_the_forward_verdict(fn):
    """Past the memory limit the verdict comes from gradcheck's projections, forward mode included."""
    args = jf.example_inputs()
    expected = gradcheck_verdict(fn, args, check_forward_ad=True)
    torch.manual_seed(0)
    report = gradviz.check(fn, args, check_forward_ad=True, raise_exception=False, max_memory_mb=1e-5)
    assert report.result.analytic_path == "projections"
    assert report.passed == expected


def test_without_backward_mode_the_table_says_so_and_shows_the_forward_blocks():
    report = gradviz.check(
        jf.SinRightJvpWrongBackward, jf.example_inputs(), check_forward_ad=True, check_backward_ad=False
    )
    text = str(report)
    assert "backward mode not checked (check_backward_ad=False)" in text
    assert "forward mode (jvp / forward AD) against numerical" in text and text.splitlines()[-1].startswith("PASSED")
    assert "forward-mode cells within tolerance" in repr(report)
