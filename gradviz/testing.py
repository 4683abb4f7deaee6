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

import inspect
from collections.abc import Callable
from typing import Any, ParamSpec

from gradviz.api import GradientMismatch, Report, check
from gradviz.api.audit import AuditReport, ModelGradientMismatch, audit
from gradviz.schema.errors import UserCodeError

__all__ = ["GradientMismatch", "ModelGradientMismatch", "UserCodeError", "assert_gradients", "assert_model_gradients"]

P = ParamSpec("P")


def _keywords_of(source: Callable[P, Report]) -> Callable[[Callable[..., Report]], Callable[P, Report]]:
    """Give the decorated function ``source``'s signature, but ``raise_exception``: for type
    checkers (a misspelt or mistyped keyword is an error), for editors and ``help()``, and for
    ``inspect.signature``. One list of keywords, ``gradviz.check``'s, with its defaults."""

    def give(function: Callable[..., Report]) -> Callable[P, Report]:
        shown = inspect.signature(source)
        kept = [p for name, p in shown.parameters.items() if name != "raise_exception"]
        function.__signature__ = shown.replace(parameters=kept)  # type: ignore[attr-defined]
        return function

    return give


@_keywords_of(check)
def assert_gradients(fn: Callable[..., Any], inputs: Any, **keywords: Any) -> Report:
    """``gradviz.check(fn, inputs, ...)`` that raises :class:`GradientMismatch` (an
    AssertionError) on failure; the report when it passes. The keywords are ``gradviz.check``'s
    (the same defaults: its signature is this function's) except ``raise_exception``: this always
    raises (passing it is a TypeError). An exception in the Function's own code raises
    :class:`UserCodeError` chained to it, its traceback the user's frames only."""
    __tracebackhide__ = True
    return check(fn, inputs, raise_exception=True, **keywords)


def assert_model_gradients(model: Callable[..., Any], *inputs: Any, **options: Any) -> AuditReport:
    """``gradviz.audit(model, *inputs, ...)`` that raises :class:`ModelGradientMismatch` (a
    :class:`GradientMismatch`, so an AssertionError) when some custom node fails at the inputs
    the model gives it, its message naming every failing node
    (``head → LeakyCapFn, call 2 of 2: out0[1,4] / x[1,4] ...``); the audit when all pass.
    ``options`` are ``gradviz.check``'s keywords but ``raise_exception``. An exception in the
    model's forward raises :class:`UserCodeError`; a model with no custom node a GradvizError."""
    __tracebackhide__ = True
    report = audit(model, *inputs, **options)
    if not report.passed:
        raise ModelGradientMismatch(report)
    return report
