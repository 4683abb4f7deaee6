"""How long a run has left, from its progress so far: plain numbers in, seconds and words out.

Qt-free so the window's run bar and the CLI share one estimate. The rate is measured from the
first progress report, not from when Run was pressed: the worker's start-up, building the
inputs and the first forward are not work the remaining rows and columns will repeat, and
counting them makes the first estimates of a long run several times too long.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CHECK_UNIT = "Jacobian rows and columns"  # what a check counts: rows of each backward pass, columns of the others
BLOCK_UNIT = "Jacobian blocks"  # what a check without full Jacobians (fast mode, too large) counts: blocks screened
SWEEP_UNIT = "forward evaluations"  # what an eps sweep counts
SHORT_UNITS = {CHECK_UNIT: "rows + cols", BLOCK_UNIT: "blocks", SWEEP_UNIT: "forwards"}  # where a progress bar has room for a word or two
FINISHING = "finishing"  # after the last unit: the Jacobians compared, hints found, results written

MIN_SECONDS = 0.5  # measure at least this long before estimating: the first reports come in bursts
MIN_DONE = 1  # ... and at least this much work

def seconds_left(
    done: int, total: int, elapsed: float, *, done_before: int = 0, elapsed_before: float = 0.0
) -> float | None:
    """Seconds until ``total`` at the rate so far: ``(total - done) · Δt / Δdone`` with
    ``Δdone = done - done_before`` and ``Δt = elapsed - elapsed_before`` (the first report's count
    and time). None while the rate is not known yet (too little measured) or nothing is left."""
    if total <= 0 or done >= total or done < 0:
        return None
    worked, took = done - done_before, elapsed - elapsed_before
    if worked < MIN_DONE or not math.isfinite(took) or took < MIN_SECONDS:
        return None
    return (total - done) * took / worked

def time_left_text(seconds: float | None) -> str:
    """``~12 s left``, ``~2 min 05 s left``, ``~1 h 03 min left``, ``<1 s left``; '' when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return ""
    if seconds < 1:
        return "<1 s left"
    whole = round(seconds)
    if whole < 60:
        return f"~{whole} s left"
    if whole < 3600:
        return f"~{whole // 60} min {whole % 60:02d} s left"
    minutes = round(seconds / 60)
    return f"~{minutes // 60} h {minutes % 60:02d} min left"

@dataclass
class RunClock:
    """One run's progress reports, turned into the time left. ``report`` takes the count and the
    seconds since the run started (any clock: the caller passes the time, so tests need none)."""

    first: tuple[int, float] | None = None  # (done, elapsed) of the first report

    def report(self, done: int, total: int, elapsed: float) -> float | None:
        """Seconds left after this report; None while unknown."""
        if self.first is None or done < self.first[0]:  # a new phase counting from zero starts over
            self.first = (done, elapsed)
        return seconds_left(done, total, elapsed, done_before=self.first[0], elapsed_before=self.first[1])


def count_text(done: int, total: int, unit: str = CHECK_UNIT) -> str:
    """``1,234 / 6,400 rows + cols``: the count and what is counted, in the short form."""
    return f"{done:,} / {total:,} {SHORT_UNITS.get(unit, unit)}".rstrip()


def finishing_text(elapsed: float, dots: str = "…") -> str:
    """``finishing… 7 s`` (the seconds since the run started): what a run says once every unit is
    counted, so a count standing at its total while the results are compared and written does not
    read as a hang. A terminal's line says ``finishing...`` (``dots``)."""
    return f"{FINISHING}{dots} {elapsed:.0f} s"
