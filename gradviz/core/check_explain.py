"""What explains a check's verdict, never what decides it: hints, warnings and notes, the diagnosis.

``check_function`` (``core/check.py``) calls ``explain`` once its result holds the verdict. The
steps here add words (hints, warnings, notes), kink marks and the float64 re-check to the result;
none of them reads or writes what ``CheckResult.passed`` reads. A step that raises (a probe the
Function cannot take, a bug in gradviz) loses its own explanation only: what it had added is taken
back, the verdict stands, and a warning says which explanation is missing. Cancelling still stops
the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gradviz.core import check_warnings, checks
from gradviz.core.check_run import CheckRun
from gradviz.core.complex_view import RealView, conjugate_hints
from gradviz.core.diagnosis import explain_failures
from gradviz.core.hints import diagnose, diagnose_across
from gradviz.core.jacobian import Progress
from gradviz.schema.errors import Cancelled
from gradviz.schema.precision import PrecisionCheck
from gradviz.schema.results import CheckResult

HINTS = "hints for the failing blocks"
WARNINGS = "warnings about precision, empty or all-zero blocks and the forward"
NOTES = "notes on what gradcheck itself would do here"
DIAGNOSIS = "diagnosis of the failing cells (kinks, round-off, float64 re-check)"
FAST_MODE = "comparison of fast mode's verdict with the cells shown"
EXPLANATION_MISSING = (
    "The {what} could not be computed ({error}), so it is missing here. The verdict is unaffected: it comes "
    "from the Jacobian comparison and gradcheck's checks alone, which ran before."
)


@dataclass(frozen=True)
class Findings:
    """What the check saw on its way to the verdict that only the explanation reads."""

    zero_analytic: bool  # no differentiable output: the numerical Jacobian had to be 0
    empty: list[str]  # the blocks with no cells
    undeclared: list[int]  # inputs the forward modified in place without ctx.mark_dirty
    changed: list[int]  # inputs the forward modified in place
    noise: float  # the largest difference of two forwards on the same inputs
    jacobian_notes: list[str]  # what the numerical and analytic Jacobians had to say about their path
    forward_warnings: list[str]  # forward mode's own warnings


def explain(
    run: CheckRun,
    result: CheckResult,
    check: Callable[..., CheckResult],
    *,
    findings: Findings,
    tracker: Progress,
) -> None:
    """Every explain step, in the order their words are read, each on its own.

    Args:
        run: what the check worked on.
        result: the check's result, its verdict complete; explanations are added to it.
        check: ``check_function``, for the re-checks of the diagnosis (passed in: this module does
            not import its caller).
        findings: what the check saw on the way.
        tracker: the check's progress, whose cancel stops the diagnosis too.

    Raises:
        Cancelled: the run was cancelled during an explain step.
    """
    _guarded(result, HINTS, lambda: add_hints(run, result))
    _guarded(result, WARNINGS, lambda: add_warnings(run, result, findings))
    _guarded(result, NOTES, lambda: add_notes(run, result, findings))
    if run.settings.explain and not findings.zero_analytic:
        _guarded(result, DIAGNOSIS, lambda: add_diagnosis(run, result, check, findings.noise, tracker))
    _guarded(result, FAST_MODE, lambda: add_fast_mode_warning(result))


def add_hints(run: CheckRun, result: CheckResult) -> None:
    """One sentence per failing block from the shape of the disagreement (``core/hints.py``); then
    the hints that need two blocks, and a complex backward's missing conjugate."""
    for block in result.blocks:
        block.hints = diagnose(block, run.names[block.input])
    diagnose_across(result.blocks, run.names)
    if isinstance(run.fn, RealView):
        conjugate_hints(result.blocks, run.settings.atol, run.settings.rtol)


def add_warnings(run: CheckRun, result: CheckResult, findings: Findings) -> None:
    """Low precision, NaN and all-zero blocks, the Jacobians' paths, a forward that modifies its input
    or draws random numbers, and forward mode's warnings (``core/check_warnings.py``)."""
    settings = run.settings
    result.warnings += check_warnings.result_warnings(
        result, run.leaves, settings, findings.zero_analytic, findings.empty
    )
    result.warnings += findings.jacobian_notes
    result.warnings += check_warnings.forward_warnings(
        run.fn, run.names, findings.undeclared, findings.noise, settings
    )
    result.warnings += findings.forward_warnings


def add_notes(run: CheckRun, result: CheckResult, findings: Findings) -> None:
    """Where torch.autograd.gradcheck itself would raise, or give another verdict on these very inputs."""
    result.notes += check_warnings.beyond_gradcheck(run.outputs)
    result.notes += check_warnings.in_place_note(findings.changed, run.in_indices, run.names)


def add_diagnosis(
    run: CheckRun, result: CheckResult, check: Callable[..., CheckResult], noise: float, tracker: Progress
) -> None:
    """Why cells fail, never whether: one diagnosis per failing block (``core/diagnosis.py``) from
    the kink probe, the forward's measured round-off and a re-check where one helps."""
    if result.n_failing:
        explain_failures(
            run.fn, run.inputs, run.settings, result, check, clone_inputs=run.mutates, noise=noise,
            cancel=tracker.check_cancel, cancel_flag=tracker.cancel,
        )  # fmt: skip


def add_fast_mode_warning(result: CheckResult) -> None:
    """Where the cells shown and gradcheck's fast verdict disagree, say which one is the verdict."""
    result.warnings += checks.fast_mode_warnings(result.checks, result.n_failing)


@dataclass
class _Added:
    """What an explain step may change in a result, as it was before the step: put back if it raises."""

    hints: list[list[str]]
    forward_hints: list[list[str]]
    kinks: list[np.ndarray | None]
    n_warnings: int
    n_notes: int
    precision: PrecisionCheck | None

    @classmethod
    def before(cls, result: CheckResult) -> _Added:
        return cls(
            [list(b.hints) for b in result.blocks],
            [list(b.hints) for b in result.forward_blocks],
            [b.kinks for b in result.blocks],
            len(result.warnings),
            len(result.notes),
            result.precision,
        )

    def take_back(self, result: CheckResult) -> None:
        for b, hints, kinks in zip(result.blocks, self.hints, self.kinks):
            b.hints, b.kinks = hints, kinks
        for b, hints in zip(result.forward_blocks, self.forward_hints):
            b.hints = hints
        del result.warnings[self.n_warnings :]
        del result.notes[self.n_notes :]
        result.precision = self.precision


def _guarded(result: CheckResult, what: str, step: Callable[[], None]) -> None:
    """Run one explain step; where it raises, take back what it added and say what is missing."""
    before = _Added.before(result)
    try:
        step()
    except Cancelled:
        raise
    except (Exception, SystemExit) as exc:  # user code runs in the probes; a SystemExit there is its error
        before.take_back(result)
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        result.warnings.append(EXPLANATION_MISSING.format(what=what, error=error))
