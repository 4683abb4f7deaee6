"""gradviz.check: gradcheck's signature and verdict, the failure message, inputs and RNG untouched.

PyTorch is the oracle throughout: gradcheck for verdicts, ``tests/real_world/oracle.py``
(functional.jacobian and a central-difference loop) for the numbers the message quotes.
"""

from __future__ import annotations

import inspect
import json
import random
import re

import numpy as np
import pytest
import torch

import gradviz
from gradviz.schema.errors import SettingsError, UserCodeError
from tests.api import functions as f
from tests.real_world import oracle


def gradcheck_passes(fn, args, **options) -> bool:
    """gradcheck's verdict, quiet about its float32 advice; raising counts as failing."""
    return oracle.gradcheck_passes(fn, args, quiet=True, failing_on=(Exception,), **options)


def test_same_parameters_and_defaults_as_gradcheck():
    ours = inspect.signature(gradviz.check).parameters
    for name, param in inspect.signature(torch.autograd.gradcheck).parameters.items():
        if name in ("func", "inputs"):
            continue
        assert name in ours, f"gradviz.check lacks gradcheck's {name}"
        assert ours[name].default == param.default, name
        assert ours[name].kind == param.kind, name


@pytest.mark.parametrize(
    "option", ["check_grad_dtypes"]
)
def test_gradcheck_options_gradviz_does_not_run_are_refused(option):
    with pytest.raises(ValueError, match=re.escape(f"{option}=True")):
        gradviz.check(f.Product, f.inputs(), **{option: True})


def test_a_class_its_apply_and_a_callable_are_all_checked():
    args = f.inputs()
    by_class = gradviz.check(f.WrongSign, args, raise_exception=False)
    by_apply = gradviz.check(f.WrongSign.apply, args, raise_exception=False)
    assert by_class.function == by_apply.function == "WrongSign"
    for key, block in by_class.analytic.items():
        np.testing.assert_array_equal(block, by_apply.analytic[key])
    wrapped = gradviz.check(f.scaled_product, args)
    assert wrapped.passed and wrapped.function == "scaled_product"
    assert [t.name for t in wrapped.result.inputs] == ["u", "v"]  # the callable's own parameter names
    assert [c.name for c in wrapped.checks] == [
        "reentrant",
        "multiplied_by_grad_output",
        "undefined_output_grads",
    ]


@pytest.mark.parametrize("fn", [3, torch.nn.Linear, "Product"], ids=["int", "not a Function class", "str"])
def test_what_is_not_a_function_is_refused(fn):
    with pytest.raises(TypeError, match=r"not a torch\.autograd\.Function subclass"):
        gradviz.check(fn, f.inputs())


def test_a_failure_raises_an_assertion_error_worded_like_assert_close():
    args = f.inputs()
    assert not gradcheck_passes(f.WrongSign.apply, args)
    with pytest.raises(AssertionError) as caught:
        gradviz.check(f.WrongSign, args)
    error = caught.value
    assert isinstance(error, gradviz.GradientMismatch) and not error.report.passed
    message = str(error)
    # the counts and the worst cell, from PyTorch's own Jacobians
    analytic = oracle.analytical_jacobian(f.WrongSign, args)
    numerical = oracle.numerical_jacobian(f.WrongSign, args)
    names = ["u", "v"]
    for (i, j), n in numerical.items():
        a = analytic[i, j]
        bad = np.abs(a - n) > 1e-5 + 1e-3 * np.abs(n)
        assert (
            f"Mismatched elements: {bad.sum()} / {n.size} ({100 * bad.sum() / n.size:.1f}%) in out{i} w.r.t. {names[j]}"
            in message
        )
    (i, j), worst = max(
        ((k, np.abs(analytic[k] - n)) for k, n in numerical.items()), key=lambda kv: kv[1].max()
    )
    row, col = np.unravel_index(np.argmax(worst), worst.shape)
    out_idx, in_idx = np.unravel_index(row, args[0].shape), np.unravel_index(col, args[j].shape)
    label = f"out{i}[{','.join(map(str, out_idx))}] / {names[j]}[{','.join(map(str, in_idx))}]"
    assert f"greatest |a - n| {worst.max():.3g} at {label}" in message
    assert f"analytic {analytic[i, j][row, col]:.3g}, numerical {numerical[i, j][row, col]:.3g}" in message
    assert "Hint (out0 / u):" in message and "sign" in message
    assert "Worst 5 cells:" in message and label in message.split("Worst 5 cells:")[1]


def test_a_failing_extra_check_is_named_in_the_message():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert not gradcheck_passes(f.NotScaledByGrad.apply, (x,))
    with pytest.raises(gradviz.GradientMismatch) as caught:
        gradviz.check(f.NotScaledByGrad, x)
    assert "Failed check multiplied_by_grad_output: backward is not multiplied by grad_output" in str(
        caught.value
    )
    assert all(b.passed for b in caught.value.report.blocks)


def test_raise_exception_false_returns_the_failing_report():
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    assert not report.passed and report.failing_cells
    errors = [c.error for c in report.failing_cells]
    assert errors == sorted(errors, reverse=True)
    first = report.failing_cells[0]
    block = report.block(first.output, first.input)
    assert block.failing[first.row, first.col] and first.label == report.result.cell_label(
        block, first.row, first.col
    )
    assert first.allowed == pytest.approx(1e-5 + 1e-3 * abs(first.numerical))


def test_report_arrays_are_pytorchs_jacobians():
    args = f.inputs(seed=3)
    report = gradviz.check(f.WrongSign, args, raise_exception=False)
    analytic = oracle.analytical_jacobian(f.WrongSign, args)
    numerical = oracle.numerical_jacobian(f.WrongSign, args)
    assert set(report.analytic) == set(analytic)
    for key in analytic:
        np.testing.assert_allclose(report.analytic[key], analytic[key], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(report.numerical[key], numerical[key], rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(
            report.failing[key], np.abs(analytic[key] - numerical[key]) > 1e-5 + 1e-3 * np.abs(numerical[key])
        )


def test_inputs_and_every_random_generator_are_untouched():
    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    x_before = x.detach().clone()
    torch.manual_seed(7)
    random.seed(7)
    np.random.seed(7)
    expected = (torch.rand(4), random.random(), np.random.rand())
    torch.manual_seed(7)
    random.seed(7)
    np.random.seed(7)
    gradviz.check(f.Noisy, x, raise_exception=False)  # forward and backward draw from all three
    assert (torch.rand(4).tolist(), random.random(), np.random.rand()) == (
        expected[0].tolist(),
        *expected[1:],
    )
    assert torch.equal(x, x_before) and x.grad is None and x.requires_grad and x.is_leaf


def test_the_rng_is_restored_when_the_check_raises():
    state = torch.get_rng_state()
    with pytest.raises(gradviz.GradientMismatch):
        gradviz.check(f.WrongSign, f.inputs())
    assert torch.equal(torch.get_rng_state(), state)


def test_an_error_in_forward_is_raised_after_the_users_own_exception():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="forward exploded"):
        torch.autograd.gradcheck(f.Exploding.apply, (x,))
    with pytest.raises(
        UserCodeError, match=r"Exploding\.forward raised RuntimeError: forward exploded"
    ) as caught:
        gradviz.check(f.Exploding, x)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert caught.value.filename.endswith("functions.py") and caught.value.lineno


def test_inputs_gradcheck_refuses_are_refused():
    x = torch.randn(3, dtype=torch.float64)
    with pytest.raises(ValueError):
        torch.autograd.gradcheck(f.Product.apply, (x, x))
    with pytest.raises(ValueError, match="No input requires grad"):
        gradviz.check(f.Product, (x, x))
    expanded = torch.randn(1, 3, dtype=torch.float64).expand(4, 3).requires_grad_()
    with pytest.raises(Exception):  # noqa: B017 (gradcheck's own exception type is not part of its API)
        torch.autograd.gradcheck(f.Product.apply, (expanded, expanded.detach().clone().requires_grad_()))
    with pytest.raises(ValueError, match="expanded tensor"):
        gradviz.check(f.Product, (expanded, torch.randn(4, 3, dtype=torch.float64)))


def test_float32_inputs_stay_float32_and_the_verdict_is_still_gradchecks():
    u, v = f.inputs(seed=1, dtype=torch.float32)
    report = gradviz.check(f.Product, (u, v), raise_exception=False)
    assert report.result.dtype == "float32" and report.result.settings.dtype == "float32"
    assert report.passed == gradcheck_passes(f.Product.apply, (u, v))
    assert any("float64" in w for w in report.warnings)


def test_tolerances_and_nondet_tol_are_gradchecks():
    u, v = f.inputs(seed=2)
    loose = {"atol": 10.0, "rtol": 0.0}
    assert gradviz.check(f.WrongSign, (u, v), **loose).passed == gradcheck_passes(
        f.WrongSign.apply, (u, v), **loose
    )
    report = gradviz.check(f.WrongSign, (u, v), eps=1e-4, raise_exception=False)
    assert report.result.settings.eps == 1e-4 and not report.passed


def test_check_undefined_grad_false_drops_that_check_only():
    report = gradviz.check(f.Product, f.inputs(), check_undefined_grad=False)
    assert [c.name for c in report.checks] == ["reentrant", "multiplied_by_grad_output"]


def test_device_moves_the_inputs_and_a_missing_device_is_a_clear_error():
    report = gradviz.check(f.Product, f.inputs(), device="cpu")
    assert report.result.device == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(SettingsError, match="CUDA"):
            gradviz.check(f.Product, f.inputs(), device="cuda")


def test_json_is_strict_and_says_what_the_report_says():
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    data = json.loads(report.to_json())
    assert data["passed"] is False and data["function"] == "WrongSign"
    assert [b["failing"] for b in data["blocks"]] == [b.n_failing for b in report.blocks]
    assert set(report.seconds) >= {"numerical", "analytic", "total"}
    assert report.hints and all(h.startswith("out0 / ") for h in report.hints)
    assert "FAILED" in repr(report) and "worst cell" in str(report)
