"""A long ``gradviz check`` on a terminal says how far it is and how long it has left.

One line on stderr, rewritten in place with ``\\r`` and wiped when the run ends, so stdout (the
table or the JSON) is exactly what it is without it. Only where stderr is a terminal: a pipe, a
file or a CI log gets nothing (a hundred rewritten lines in a log help nobody). Only once the run
has taken ``DELAY_S``: a quick check stays as quiet as before. The time left comes from
``gradviz.schema.time_left``, the estimate the window's run bar shows.

Between the worker's reports the line keeps moving (a ticker thread, every ``TICK_S``): before the
first report (the worker starting, torch and the user's module importing) it says so with the
seconds elapsed, and after the last (the Jacobians compared, arrays written) it says it is
finishing; a line that stood still for half a minute looked like a hang.

The Function's own output goes through ``write`` here: the line is wiped first, so what the
Function prints never lands in the middle of it, and it comes back at the next report.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO

from gradviz.schema.time_left import RunClock, finishing_text, time_left_text

DELAY_S = 1.0  # a run shorter than this shows nothing
INTERVAL_S = 0.25  # at most four rewrites a second (the worker reports every 0.05 s)
TICK_S = 0.5  # how often the line moves while no report comes


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
        self._last: tuple[int, int] | None = None  # the last report's (done, total)
        self._lock = threading.RLock()  # the ticker thread and the caller's reports share the line
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            elapsed = self._clock() - self._started
            left = self._estimate.report(done, total, elapsed)  # every report counts for the rate
            self._last = (done, total)
            if not self.enabled or elapsed < DELAY_S or total <= 0:
                return
            if self._drawn_at is not None and elapsed - self._drawn_at < INTERVAL_S and done < total:
                return
            self._drawn_at = elapsed
            self._draw(progress_line(done, total, left))

    def tick(self) -> None:
        """Between reports: before the first and after the last, the line says what is going on
        and for how long (mid-run, the reports themselves move it)."""
        with self._lock:
            elapsed = self._clock() - self._started
            if not self.enabled or elapsed < DELAY_S:
                return
            if self._last is not None and self._last[0] < self._last[1]:
                return
            if self._drawn_at is not None and elapsed - self._drawn_at < TICK_S:
                return
            self._drawn_at = elapsed
            self._draw(waiting_line(self._last, elapsed))

    def write(self, text: str) -> None:
        """The Function's output: on a line of its own, never through the progress line."""
        with self._lock:
            self.clear()
            self._put(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def clear(self) -> None:
        """Wipe the line (blanks over it, the cursor back at its start)."""
        with self._lock:
            if self._width:
                width, self._width = self._width, 0
                self._put("\r" + " " * width + "\r")
                self._drawn_at = None  # drawn again at the next report

    def __enter__(self) -> TerminalProgress:
        if self.enabled and self._ticker is None:
            self._stop.clear()
            self._ticker = threading.Thread(target=self._tick_until_stopped, name="gradviz-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
        self.clear()

    def _tick_until_stopped(self) -> None:
        while not self._stop.wait(TICK_S):
            self.tick()

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


def waiting_line(last: tuple[int, int] | None, elapsed: float) -> str:
    """The line while no report comes: before the first (nothing counted yet) or after the last."""
    if last is None or last[1] <= 0:
        return f"gradviz: starting (worker, torch, your code)... {elapsed:.0f} s"
    return f"gradviz: 100% ({last[1]:,} / {last[1]:,}), {finishing_text(elapsed, dots='...')}"


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False
