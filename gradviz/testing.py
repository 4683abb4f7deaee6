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

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, ParamSpec, TypeVar

import torch

from gradviz.api import GradientMismatch, Report, check
from gradviz.api.audit import AuditReport, ModelGradientMismatch, audit
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import CheckSettings

__all__ = ["GradientMismatch", "ModelGradientMismatch", "UserCodeError", "assert_gradients", "assert_model_gradients"]

P = ParamSpec("P")
R = TypeVar("R")
_DEFAULT = CheckSettings()  # the defaults gradviz.check takes too


def _refusing_raise_exception(function: Callable[P, R]) -> Callable[P, R]:
    """Say what to call instead when a gradcheck habit passes ``raise_exception`` (a type error
    already: the signature has no such parameter)."""

    @functools.wraps(function)
    def call(*args: P.args, **keywords: P.kwargs) -> R:
        __tracebackhide__ = True
        if "raise_exception" in keywords:
            raise TypeError(
                "assert_gradients() takes no raise_exception: it always raises GradientMismatch on a "
                "failure. For the report without raising, call gradviz.check(fn, inputs, "
                "raise_exception=False); bool(report) is its verdict."
            )
        return function(*args, **keywords)

    return call


# The keywords are gradviz.check's, but raise_exception, written out so that type checkers,
# editors and help() see each one (a typing.ParamSpec cannot drop one); tests/test_typing.py
# holds the two signatures equal, defaults and annotations included.
@_refusing_raise_exception
def assert_gradients(
    fn: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = _DEFAULT.eps,
    atol: float = _DEFAULT.atol,
    rtol: float = _DEFAULT.rtol,
    nondet_tol: float = _DEFAULT.nondet_tol,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
    jacobian_only: bool = _DEFAULT.jacobian_only,
    all_checks: bool = _DEFAULT.all_checks,
    device: str | torch.device | None = None,
    max_memory_mb: float | None = None,
    parameters: bool | Sequence[str] = False,
    check_vmap_rule: bool | None = _DEFAULT.check_vmap_rule,
    opcheck: Literal["warn", "fail"] = "warn",
) -> Report:
    """``gradviz.check(fn, inputs, ...)`` for a test suite: it raises where the check fails.

    Args:
        fn: a Function class, its ``.apply``, a custom op or a callable built on these, as for
            :func:`gradviz.check`.
        inputs: a tensor or a tuple of arguments, as gradcheck takes them.
        eps, atol, rtol, nondet_tol, check_undefined_grad, ..., check_vmap_rule: ``gradviz.check``'s
            keywords with its defaults (gradcheck's); every one but ``raise_exception``.

    Returns:
        The :class:`gradviz.Report` of a check that passed.

    Raises:
        GradientMismatch: the check fails (an AssertionError whose message names the failing
            cells; the report is ``exc.report``).
        UserCodeError: the Function's own code raised; chained to that exception, its traceback
            the user's frames only.
        GradvizError: bad settings (``SettingsError``), as for :func:`gradviz.check`.
        TypeError: ``raise_exception`` is passed (this always raises), a keyword is unknown, or
            ``fn`` is not checkable, as for :func:`gradviz.check`.
        ValueError: what gradcheck refuses too, as for :func:`gradviz.check`.
    """
    __tracebackhide__ = True
    return check(
        fn,
        inputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=True,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_batched_forward_grad=check_batched_forward_grad,
        check_forward_ad=check_forward_ad,
        check_backward_ad=check_backward_ad,
        fast_mode=fast_mode,
        masked=masked,
        jacobian_only=jacobian_only,
        all_checks=all_checks,
        device=device,
        max_memory_mb=max_memory_mb,
        parameters=parameters,
        check_vmap_rule=check_vmap_rule,
        opcheck=opcheck,
    )


def assert_model_gradients(model: Callable[..., Any], *inputs: Any, **options: Any) -> AuditReport:
    """``gradviz.audit(model, *inputs, ...)`` for a test suite: it raises where a node fails.

    Args:
        model: an ``nn.Module`` or any callable built on custom Functions and ops.
        *inputs: its arguments, as the model takes them.
        **options: :func:`gradviz.audit`'s keywords (``max_checks`` and ``gradviz.check``'s, but
            ``raise_exception``).

    Returns:
        The :class:`gradviz.AuditReport` of an audit whose every checked node passed.

    Raises:
        ModelGradientMismatch: some custom node fails at the inputs the model gives it (a
            :class:`GradientMismatch`, so an AssertionError); the message names every failing
            node (``head → LeakyCapFn, call 2 of 2: out0[1,4] / x[1,4] ...``), ``exc.report``
            is the audit.
        UserCodeError: the model's forward raised.
        GradvizError: the forward called no custom Function or op, or none could be checked.
        TypeError, ValueError: as :func:`gradviz.audit` raises them.
    """
    __tracebackhide__ = True
    report = audit(model, *inputs, **options)
    if not report.passed:
        raise ModelGradientMismatch(report)
    return report
