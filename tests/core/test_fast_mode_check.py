"""The one caller of ``torch.autograd.gradcheck(fast_mode=True)`` (``checks.check_fast_mode``).

The ordinary check (Jacobians held) and the checks that hold none (``core/verdict_first.py``:
fast mode's verdict first, Jacobians too large) both ask it, with the undefined-gradient tests
run under their own names beside it; its verdict must be gradcheck's own with the same options,
whichever asks.
"""

from __future__ import annotations

import pytest
import torch

from gradviz.core.checks import check_fast_mode
from gradviz.schema.results import FAST_MODE
from gradviz.schema.settings import CheckSettings
from tests.core import option_functions as fns


def gradcheck_fast(fn, x: torch.Tensor, **options) -> bool:
    torch.manual_seed(0)  # fast mode's u, v come from the global generator
    return torch.autograd.gradcheck(fn.apply, (x,), fast_mode=True, raise_exception=False, **options)


@pytest.mark.parametrize("fn", fns.FUNCTIONS, ids=lambda f: f.__name__)
def test_both_callers_get_gradchecks_fast_verdict(fn):
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    settings = CheckSettings()
    torch.manual_seed(0)
    held = check_fast_mode(fn, (x,), settings)
    assert held.name == FAST_MODE
    assert held.failed == (not gradcheck_fast(fn, x, check_undefined_grad=False))
    torch.manual_seed(0)
    large = check_fast_mode(fn, (x,), settings, holds_jacobians=False)
    assert large.failed == (not gradcheck_fast(fn, x, check_undefined_grad=False))


def test_the_large_path_names_it_fast_mode_only_when_asked_for():
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    searched = check_fast_mode(fns.Square, (x,), CheckSettings(), holds_jacobians=False)
    asked = check_fast_mode(fns.Square, (x,), CheckSettings(fast_mode=True), holds_jacobians=False)
    assert (searched.name, asked.name) == ("fast_projection", FAST_MODE)
