"""A long ``gradviz check`` on a terminal says how far it is and how long it has left.

One line on stderr, rewritten in place with ``\\r`` and wiped when the run ends, so stdout (the
table or the JSON) is exactly what it is without it. Only where stderr is a terminal: a pipe, a
file or a CI log gets nothing (a hundred rewritten lines in a log help nobody). Only once the run
has taken ``DELAY_S``: a quick check stays as quiet as before. The time left comes from
``gradviz.schema.time_left``, the estimate the window's run bar shows.

The Function's own output goes through ``write`` here: the line is wiped first, so what the
Function prints never lands in the middle of it, and it comes back at the next report.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO

from gradviz.schema.time_left import RunClock, time_left_text

DELAY_S = 1.0  # a run shorter than this shows nothing
INTERVAL_S = 0.25  # at most four rewrites a second (the worker reports every 0.05 s)


class TerminalProgress:
    """``progress(done, total)`` for ``run_request``, drawing on ``stream`` when it is a terminal.

    ``clock`` is any monotonic clock in seconds (tests pass their own); ``enabled`` overrides the
    terminal test."""

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self._clock = clock
        self._started = clock()
        self._drawn_at: float | None = None
        self._width = 0  # characters of the line on screen now (0: none)
        self._estimate = RunClock()

    def __call__(self, done: int, total: int) -> None:
        elapsed = self._clock() - self._started
        left = self._estimate.report(done, total, elapsed)  # every report counts for the rate
        if not self.enabled or elapsed < DELAY_S or total <= 0:
            return
        if self._drawn_at is not None and elapsed - self._drawn_at < INTERVAL_S and done < total:
            return
        self._drawn_at = elapsed
        self._draw(progress_line(done, total, left))

    def write(self, text: str) -> None:
        """The Function's output: on a line of its own, never through the progress line."""
        self.clear()
        self._put(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def clear(self) -> None:
        """Wipe the line (blanks over it, the cursor back at its start)."""
        if self._width:
            width, self._width = self._width, 0
            self._put("\r" + " " * width + "\r")
            self._drawn_at = None  # drawn again at the next report

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()

    def _draw(self, line: str) -> None:
        # blanks (not an ANSI erase) over what is longer: every terminal, Windows' console included
        self._put("\r" + line.ljust(self._width))
        self._width = len(line)

    def _put(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (AttributeError, OSError, ValueError):  # no stderr, or a closed terminal: the check goes on
            self.enabled, self._width = False, 0


def progress_line(done: int, total: int, seconds_left: float | None) -> str:
    """``gradviz: 19% (1,234 / 6,400), ~12 s left``: the worker's count (Jacobian rows and columns
    for a check), and the time left once the rate is known."""
    left = time_left_text(seconds_left)
    line = f"gradviz: {100 * done // max(total, 1)}% ({done:,} / {total:,})"
    return f"{line}, {left}" if left else line


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False
