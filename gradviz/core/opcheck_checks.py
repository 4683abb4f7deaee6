"""``torch.library.opcheck``'s tests, run on a custom op as named checks beside gradcheck's.

opcheck tests what registering an op can get wrong: the schema (``test_schema``: an input written
without ``mutates_args``), the autograd registration (``test_autograd_registration``), the fake
kernel (``test_faketensor``: shapes and dtypes of ``register_fake`` against the real kernel) and
tracing through AOT dispatch with dynamic shapes (``test_aot_dispatch_dynamic``). Each is a real
bug that breaks ``torch.compile`` or export, so a failing one is a FAILED check and fails gradviz's
verdict, as a failing reentrancy check does. None of them compares derivatives: opcheck passes a
wrong backward, which the Jacobian comparison fails (gradcheck's verdict, unchanged by these).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradviz.core.custom_ops import is_user_op, op_overload
from gradviz.core.quiet_warnings import warnings_ignored
from gradviz.schema.results import FAILED, PASSED, CheckOutcome

# opcheck's test -> gradviz's check name
OPCHECK_TESTS = {
    "test_schema": "opcheck_schema",
    "test_autograd_registration": "opcheck_autograd_registration",
    "test_faketensor": "opcheck_faketensor",
    "test_aot_dispatch_dynamic": "opcheck_aot_dispatch",
}
WHAT = {
    "test_schema": "the op writes only the inputs its mutates_args declares, and returns no alias of one",
    "test_autograd_registration": "the autograd formula is registered where the dispatcher looks for it",
    "test_faketensor": "the fake kernel (register_fake) gives the real kernel's shapes, strides and dtypes",
    "test_aot_dispatch_dynamic": "the op traces through AOT dispatch with dynamic shapes (torch.compile)",
}
__all__ = ["OPCHECK_TESTS", "opcheck_outcomes"]


def opcheck_outcomes(fn: Any, args: Sequence[Any]) -> list[CheckOutcome]:
    """One outcome per opcheck test for a custom op (``fn.op``) the user registered; none for
    anything else (a Function, PyTorch's own ``torch.ops.aten.*``).

    Runs on clones of ``args``: test_schema calls the op, and a wrong op writes into its inputs.
    """
    op = getattr(fn, "op", None)
    if op is None or not is_user_op(op):  # torch.ops.aten.sin: PyTorch's own, not opcheck's to test
        return []
    return [_run(op_overload(op), args, test, name) for test, name in OPCHECK_TESTS.items()]


def _run(op: Any, args: Sequence[Any], test: str, name: str) -> CheckOutcome:
    call = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args)
    try:
        with warnings_ignored():
            found = torch.library.opcheck(op, call, test_utils=test, raise_exception=False).get(test)
    except Exception as exc:  # opcheck itself could not run the test
        return CheckOutcome(name, FAILED, f"opcheck's {test} could not run: {_first_line(exc)}")
    if found == "SUCCESS":
        return CheckOutcome(name, PASSED, f"opcheck's {test}: {WHAT[test]}.")
    if isinstance(found, BaseException):
        return CheckOutcome(name, FAILED, f"opcheck's {test} fails: {_first_line(found)}")
    return CheckOutcome(name, FAILED, f"opcheck's {test} fails: {found}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
