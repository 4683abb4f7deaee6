"""What the writers of a report read of it: the files, the reproducer script and the sweep.

``Report`` (``gradviz.api.report``) satisfies this protocol and calls those writers from its
methods (``save``, ``reproducer``, ``sweep``); they take a ``CheckedReport`` rather than a
``Report`` so that none of them imports the module that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from gradviz.schema.results import CheckResult


class CheckedReport(Protocol):
    """A check's result, with the Function and the copies of the inputs it was checked at (None
    for a report read back from JSON), and the keywords its gradcheck call needs."""

    fn: Callable[..., Any] | None
    inputs: tuple[Any, ...] | None
    gradcheck_options: dict[str, Any]

    @property
    def result(self) -> CheckResult: ...

    @property
    def function(self) -> str: ...

    def message(self) -> str:
        """The verdict line when it passed, the failure message otherwise."""
        ...

    def _need_inputs(self, what: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """The Function and the inputs; ValueError naming ``what`` for a report without them."""
        ...
