"""``torch.library.opcheck``'s tests, run on a custom op as named registration checks beside gradcheck's.

opcheck tests what registering an op can get wrong: the schema (``test_schema``: an input written
without ``mutates_args``), the autograd registration (``test_autograd_registration``), the fake
kernel (``test_faketensor``: shapes and dtypes of ``register_fake`` against the real kernel) and
tracing through AOT dispatch with dynamic shapes (``test_aot_dispatch_dynamic``). Each is a real
bug that breaks ``torch.compile`` or export, but none of them is about derivatives: gradcheck
passes an op with a right backward and no fake kernel, and opcheck passes a wrong backward. So by
default a failing test is WARNED (named, saying what breaks and how to fix it) and the verdict
stays gradcheck's; ``CheckSettings.opcheck == "fail"`` makes it a FAILED check that counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradviz.core.custom_ops import is_user_op, op_overload, op_python_name
from gradviz.core.quiet_warnings import warnings_ignored
from gradviz.schema.results import FAILED, PASSED, WARNED, CheckOutcome

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
# what a failing test breaks: none of it is the gradient gradcheck checks
BREAKS = {
    "test_schema": "torch.compile and functionalization, which trust the schema to say which inputs the op writes",
    "test_autograd_registration": "autograd under torch.compile and AOT dispatch, which look the backward up "
    "where register_autograd puts it",
    "test_faketensor": "torch.compile, torch.export and FX tracing, which run the fake kernel to learn the "
    "outputs' shapes and dtypes without running the op",
    "test_aot_dispatch_dynamic": "torch.compile (AOT dispatch traces the op, its fake kernel and its backward "
    "with dynamic shapes)",
}
FIX = {
    "test_schema": "name every input the op writes in mutates_args, and return a new tensor, never an input "
    "or a view of one",
    "test_autograd_registration": "register the backward with {op}.register_autograd(backward, "
    "setup_context=...) rather than calling the op inside an autograd.Function",
    "test_faketensor": "make the fake kernel (@{op}.register_fake) return outputs of the real kernel's shapes, "
    "strides and dtypes",
    "test_aot_dispatch_dynamic": "give the op a fake kernel that works for any input shape ({op}.register_fake) "
    "and a backward made of traceable torch operations",
}
ADD_FAKE = (
    "add a fake kernel with @{op}.register_fake: a function of the op's arguments that returns empty outputs "
    "of the real ones' shapes and dtypes (e.g. torch.empty_like(x))"
)
NOT_THE_VERDICT = "gradcheck does not test this, so the verdict is unchanged (opcheck=\"fail\" / --opcheck fail counts it)"
COUNTED = "gradcheck does not test this; it fails the verdict because opcheck=\"fail\" (--opcheck fail) was asked for"
__all__ = ["OPCHECK_TESTS", "opcheck_outcomes"]


def opcheck_outcomes(fn: Any, args: Sequence[Any], *, counts: bool = False) -> list[CheckOutcome]:
    """One outcome per opcheck test for a custom op (``fn.op``) the user registered; none for
    anything else (a Function, PyTorch's own ``torch.ops.aten.*``).

    Args:
        fn: what the check runs (a ``CustomOpFunction`` has ``op``).
        args: the op's arguments; the tests run on clones (test_schema calls the op, and a wrong op
            writes into its inputs).
        counts: a failing test is FAILED (it fails the verdict) instead of WARNED.

    Returns:
        The outcomes, named as in ``OPCHECK_TESTS``.
    """
    op = getattr(fn, "op", None)
    if op is None or not is_user_op(op):  # torch.ops.aten.sin: PyTorch's own, not opcheck's to test
        return []
    found = FAILED if counts else WARNED
    return [_run(op, args, test, name, found) for test, name in OPCHECK_TESTS.items()]


def _run(op: Any, args: Sequence[Any], test: str, name: str, found_status: str) -> CheckOutcome:
    call = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args)
    try:
        with warnings_ignored():
            found = torch.library.opcheck(op_overload(op), call, test_utils=test, raise_exception=False).get(test)
    except Exception as exc:  # opcheck itself could not run the test
        return CheckOutcome(name, found_status, _explained(op, test, f"could not run: {_first_line(exc)}", found_status))
    if found == "SUCCESS":
        return CheckOutcome(name, PASSED, f"opcheck's {test}: {WHAT[test]}.")
    problem = _first_line(found) if isinstance(found, BaseException) else str(found)
    return CheckOutcome(name, found_status, _explained(op, test, f"fails: {problem}", found_status))


def _explained(op: Any, test: str, what: str, status: str) -> str:
    """One line: what opcheck found, what that breaks, how to fix it, and that gradcheck's verdict stands."""
    handle = op_python_name(op)
    fix = ADD_FAKE if "no fake impl" in what.lower() else FIX[test]
    return (
        f"opcheck's {test} {what.rstrip('.')}. This breaks {BREAKS[test]}. Fix: {fix.format(op=handle)}. "
        f"{COUNTED if status == FAILED else NOT_THE_VERDICT}."
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
