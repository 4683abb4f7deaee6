"""``bool()`` of what the API returns is its verdict: ``assert gradviz.check(f, x, raise_exception=False)``
fails exactly where ``assert torch.autograd.gradcheck(f, x, raise_exception=False)`` does.

gradcheck is the oracle: every expected truth value below is its return value, computed here.
"""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.api.sweep import Sweep
from gradviz.testing import assert_gradients
from tests.api import functions as f
from tests.core.why_functions import Tanh, TanhOneMinusY


def _x() -> torch.Tensor:
    return torch.linspace(-1.5, 1.5, 12, dtype=torch.float64).reshape(3, 4).requires_grad_()


def _gradcheck(fn, args, **options) -> bool:
    return bool(torch.autograd.gradcheck(fn.apply, args, raise_exception=False, **options))


@pytest.mark.parametrize(
    ("fn", "args", "options"),
    [
        (f.WrongSign, f.inputs(), {}),  # a wrong Jacobian
        (f.NotScaledByGrad, (torch.randn(5, dtype=torch.float64, requires_grad=True),), {}),  # a failed check only
        (f.Product, f.inputs(), {}),
        (TanhOneMinusY, (_x(),), {"check_undefined_grad": False}),
        (Tanh, (_x(),), {"check_undefined_grad": False}),
    ],
    ids=["wrong-jacobian", "wrong-grad-output-scaling", "right", "wrong-tanh", "right-tanh"],
)
def test_assert_on_a_report_is_gradchecks_verdict(fn, args, options):
    expected = _gradcheck(fn, args, **options)
    report = gradviz.check(fn, args, raise_exception=False, **options)
    assert bool(report) is expected is report.passed
    if expected:
        assert gradviz.check(fn, args, raise_exception=False, **options)
    else:
        with pytest.raises(AssertionError):
            assert gradviz.check(fn, args, raise_exception=False, **options)
        assert not report  # the idiom people bring from gradcheck


def test_the_wrong_sign_case_is_false_in_gradcheck_and_in_gradviz():
    args = f.inputs()
    assert torch.autograd.gradcheck(f.WrongSign.apply, args, raise_exception=False) is False
    with pytest.raises(AssertionError):
        assert gradviz.check(f.WrongSign, args, raise_exception=False)


def test_assert_gradients_hands_back_a_true_report():
    args = f.inputs()
    assert _gradcheck(f.Product, args)
    report = assert_gradients(f.Product, args)
    assert report and report.passed


def test_a_sweep_is_true_where_it_finds_the_backward_right_and_false_where_wrong():
    x = _x()
    right, wrong = _gradcheck(Tanh, (x,)), _gradcheck(TanhOneMinusY, (x,))
    assert right and not wrong
    good = gradviz.check(Tanh, (x,)).sweep()
    bad = gradviz.check(TanhOneMinusY, (x,), raise_exception=False).sweep()
    assert isinstance(good, Sweep) and isinstance(bad, Sweep)
    assert bool(good) is good.passed is True
    assert bool(bad) is bad.passed is False
    with pytest.raises(AssertionError):
        assert gradviz.check(TanhOneMinusY, (x,), raise_exception=False).sweep()
