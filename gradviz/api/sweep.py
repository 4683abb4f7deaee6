"""``Report.sweep()``: the eps sweep of the Function and inputs a report was made from.

It runs the same core sweep as ``gradviz sweep FILE`` and the window's Why? panel, in the
caller's process, on fresh copies of the report's inputs, with the report's eps, atol and rtol,
so its verdict speaks about the check the caller just ran.
"""

from __future__ import annotations

from dataclasses import fields

from gradviz.api.arguments import as_arguments, owned_copies, prepared_arguments
from gradviz.api.checked import CheckedReport
from gradviz.core.callables import as_checkable
from gradviz.core.sweep import sweep_function
from gradviz.notebook import EPS_VERDICTS, sweep_html
from gradviz.schema.settings import SweepOptions
from gradviz.schema.sweep import SweepResult, Verdict


class Sweep(SweepResult):
    """The schema's SweepResult as ``Report.sweep()`` hands it to a user: the same fields and
    methods, ``passed`` (and ``bool``), and in a notebook the card of
    ``gradviz.notebook.sweep_html`` (the schema itself knows nothing of HTML)."""

    @property
    def passed(self) -> bool:
        """The sweep finds the backward right (at some eps, or right but limited by the dtype's
        precision); False for a wrong backward, a kink and an inconclusive sweep, so that
        ``assert report.sweep()`` never passes on a backward the sweep could not clear."""
        return self.verdict in (Verdict.BACKWARD_RIGHT, *EPS_VERDICTS)

    def __bool__(self) -> bool:
        return self.passed

    def _repr_html_(self) -> str:
        return sweep_html(self)


def sweep_report(
    report: CheckedReport, block: tuple[int, int] | None = None, options: SweepOptions | None = None
) -> Sweep:
    """Sweep eps for ``report``'s Function; ``block`` picks one (output, input) Jacobian block.
    The report's own copies of the inputs are copied again: they stay as checked."""
    __tracebackhide__ = True
    checkable = as_checkable(report.fn)
    args = owned_copies(as_arguments(report.inputs), None)
    with prepared_arguments(checkable, args, None) as prepared:
        swept = sweep_function(
            checkable, prepared, report.result.settings, block=block, options=options, name=report.function
        )
    return Sweep(**{f.name: getattr(swept, f.name) for f in fields(swept)})
