"""A forward that modifies its input in place: the verdict of gradcheck on fn(x.clone()), and a note
saying why gradcheck on fn(x) itself would differ."""

import pytest
import torch

import gradviz
from tests.core.functions import InPlaceDouble


class DoubleInPlaceWrong(InPlaceDouble):
    @staticmethod
    def backward(ctx, g):
        return g * 3


def _x() -> torch.Tensor:
    return torch.randn(5, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("fn", [InPlaceDouble, DoubleInPlaceWrong])
def test_the_verdict_is_gradchecks_on_a_copy_of_the_input(fn):
    torch.manual_seed(0)
    x = _x()
    expected = torch.autograd.gradcheck(lambda t: fn.apply(t.clone()), (x,), raise_exception=False)
    report = gradviz.check(lambda t: fn.apply(t.clone()), (x,), raise_exception=False)
    assert report.passed == expected
    direct = gradviz.check(fn, (x.detach().clone().requires_grad_(),), raise_exception=False)
    assert direct.passed == expected


def test_the_note_says_why_gradcheck_on_the_input_itself_differs():
    torch.manual_seed(0)
    x = _x()
    # what the note warns about: gradcheck on the dirty Function fails even though backward is right
    assert not torch.autograd.gradcheck(InPlaceDouble.apply, (x.clone(),), raise_exception=False)
    report = gradviz.check(InPlaceDouble, (x.detach().clone().requires_grad_(),))
    assert any("modifies x in place" in note for note in report.notes)
    assert not any("in place" in note for note in gradviz.check(lambda t: t * 2, (x,)).notes)
