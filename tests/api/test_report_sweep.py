"""report.sweep(): the eps sweep of what gradviz.check just checked, in the caller's process."""

import pytest
import torch

import gradviz
from gradviz.schema.sweep import Verdict
from tests.core.why_functions import Tanh, TanhOneMinusY


def _x() -> torch.Tensor:
    return torch.linspace(-1.5, 1.5, 12, dtype=torch.float64).reshape(3, 4).requires_grad_()


def test_a_right_backward_sweeps_right_and_the_inputs_stay_untouched():
    x = _x()
    before = x.detach().clone()
    report = gradviz.check(Tanh, (x,))
    sweep = report.sweep()
    assert torch.autograd.gradcheck(Tanh.apply, (x,))
    assert sweep.verdict == Verdict.BACKWARD_RIGHT and sweep.function == report.function
    assert sweep.eps == report.result.settings.eps
    assert torch.equal(x.detach(), before) and x.grad is None


def test_a_wrong_backward_sweeps_wrong_where_gradcheck_fails():
    x = _x()
    assert not torch.autograd.gradcheck(TanhOneMinusY.apply, (x,), raise_exception=False)
    report = gradviz.check(TanhOneMinusY, (x,), raise_exception=False)
    sweep = report.sweep(block=(0, 0))
    assert sweep.verdict == Verdict.BACKWARD_WRONG
    assert sweep.block(0, 0) is not None


def test_a_callable_built_on_functions_sweeps_too():
    report = gradviz.check(lambda x: Tanh.apply(x) * 2, _x())
    assert report.sweep().verdict == Verdict.BACKWARD_RIGHT


def test_a_report_without_its_function_cannot_sweep():
    report = gradviz.check(Tanh, (_x(),))
    bare = gradviz.Report(report.result)
    with pytest.raises(ValueError, match=r"sweep\(\) needs the Function"):
        bare.sweep()
