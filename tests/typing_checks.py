"""What a user's type checker sees of gradviz: checked by ``mypy`` in ``make test`` and ``make lint``
(this file is in ``[tool.mypy] files``), never run.

``assert_type`` fails on ``Any``, so a lazy export that type checkers cannot see fails here. A
misspelt name of ``gradviz`` and a misspelt keyword of ``assert_gradients`` must be errors: their
``# type: ignore`` would otherwise be unused, which ``warn_unused_ignores`` reports
(``tests/test_typing.py`` also runs mypy on these mistakes without the ignores).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, assert_type

import torch

import gradviz
from gradviz.api.report import GradientMismatch, Report
from gradviz.schema.errors import GradvizError
from gradviz.testing import assert_gradients

if TYPE_CHECKING:
    from gradviz import Reprot  # type: ignore[attr-defined]  # noqa: F401  # a misspelt export is an error


def lazy_exports_have_their_real_types(fn: Callable[..., Any], x: torch.Tensor) -> None:
    assert_type(gradviz.check(fn, x), Report)  # not Any
    gradviz.check(fn, x, epss=1e-6)  # type: ignore[call-arg]  # a typo is an error
    gradviz.show(fn)  # type: ignore[call-arg]  # so is a missing argument
    gradviz.chek(fn, x)  # type: ignore[attr-defined]  # and a misspelt name
    assert_type(gradviz.Report, type[Report])
    assert_type(gradviz.GradientMismatch, type[GradientMismatch])
    assert_type(gradviz.GradvizError, type[GradvizError])


def assert_gradients_keywords_are_checked(fn: Callable[..., Any], x: torch.Tensor) -> None:
    assert_type(assert_gradients(fn, x, eps=1e-6, atol=1e-5, rtol=1e-3, device="cpu"), Report)
    assert_gradients(fn, x, epss=1e-6)  # type: ignore[call-arg]  # a typo is an error
    assert_gradients(fn, x, atol="1e-5")  # type: ignore[arg-type]  # so is a string tolerance
    assert_gradients(fn, x, raise_exception=False)  # type: ignore[call-arg]  # it always raises
