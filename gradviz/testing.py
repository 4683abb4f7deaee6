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

from collections.abc import Callable, Sequence
from typing import Any

import torch

from gradviz.api import GradientMismatch, Report, check
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import CheckSettings

__all__ = ["GradientMismatch", "UserCodeError", "assert_gradients"]

_DEFAULT = CheckSettings()  # the defaults' one home, as gradviz.check reads them


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
) -> Report:
    """``gradviz.check(fn, inputs, ...)`` that raises :class:`GradientMismatch` (an
    AssertionError) on failure; the report when it passes. The keywords are ``gradviz.check``'s
    (the same defaults, from the same places; tests/test_typing.py keeps the two signatures equal)
    except ``raise_exception``: this always raises. Explicit keywords, not ``**kwargs``, so editors
    complete them and type checkers catch a misspelt one. An exception in the Function's own
    code raises :class:`UserCodeError` chained to it, its traceback the user's frames only."""
    __tracebackhide__ = True
    return check(
        fn,
        inputs,
        raise_exception=True,
        eps=eps,
        atol=atol,
        rtol=rtol,
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
    )
