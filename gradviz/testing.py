"""Gradient checks for test suites: a failing cell fails the test with its name and the hint.

    from gradviz.testing import assert_gradients

    def test_square_backward():
        x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
        assert_gradients(Square, x)

pytest then shows "Mismatched elements: 5 / 144 (3.5%) in out0 w.r.t. x; greatest |a - n| ...",
the hint and the worst cells instead of two truncated matrices. ``pytest --gradviz-artifacts DIR``
also writes the report, its figures and a reproducer script for every failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradviz.api import GradientMismatch, Report, check
from gradviz.schema.errors import UserCodeError

__all__ = ["GradientMismatch", "UserCodeError", "assert_gradients"]


def assert_gradients(fn: Callable, inputs: Any, **tolerances: Any) -> Report:
    """``gradviz.check(fn, inputs, **tolerances)`` that raises :class:`GradientMismatch` (an
    AssertionError) on failure; the report when it passes. ``tolerances``: eps, atol, rtol,
    nondet_tol and the other keywords of ``gradviz.check``. An exception in the Function's own
    code raises :class:`UserCodeError` chained to it, its traceback the user's frames only."""
    __tracebackhide__ = True
    if "raise_exception" in tolerances:
        raise TypeError(
            "assert_gradients always raises on failure: call gradviz.check(..., raise_exception=False)."
        )
    return check(fn, inputs, raise_exception=True, **tolerances)
