"""The Function list of the text being edited, kept current without slowing the typing.

A change starts a short timer and the list is found again when it fires, so the text is scanned
at most a few times a second however fast the keys come, and on a thread of its own. The scan
reads top-level class headers (``class Name(bases):``), never the whole module: ``ast.parse`` of
a 10,000-line file holds the interpreter, and with it the window, for a tenth of a second. The
rule is ``function_names``'s; the worker's exact list replaces this one after a run.

A scan thread still takes turns with the window for the interpreter, so scans are kept few and
cheap whatever the text (2 MB of unclosed ``class A(`` once made 17 threads of quadratic scans and
keys that took seconds): at most one scan runs at a time, a newer request cancels it (it stops at
its next check) and runs once it has stopped, and an answer to anything but the newest request is
dropped. A header's bases are looked for only up to the next header, so the scan is linear in the
text, and it lets the window have the interpreter every millisecond or so. A text of more than
LIVE_SCAN_CHARS is scanned when it is shown, not as it is typed (reading it out of the editor
alone would hold the window for tens of milliseconds); a run's list replaces it.
"""

from __future__ import annotations

import ast
import functools
import re
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from gradviz.app.background import run_in_thread

REPARSE_DELAY_MS = 300  # the list follows the text at most this long after a change
FUNCTION_BASES = ("Function", "InplaceFunction")
MAX_HEADER_CHARS = 4000  # bases longer than this are not a Function's
LIVE_SCAN_CHARS = 1_000_000  # a longer text is scanned when shown, not on every edit
YIELD_EVERY_S = 0.001  # a scan hands the interpreter to the window this often
_CLASS_HEADER = re.compile(r"^class[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_BRACKET = re.compile(r"[()\[\]{}]")
# a top-level ``@torch.library.custom_op("ns::name", ...)`` decorator: the op is listed as ns::name
_CUSTOM_OP = re.compile(r"""^@[\w.]*\bcustom_op\(\s*["']([^"'\\\n]+)["']""", re.MULTILINE)


class ScanCancelled(Exception):
    """A newer scan was asked for: this one's answer would be dropped anyway."""


def _bases_text(source: str, start: int, end: int) -> str | None:
    """The text between the ``(`` before ``start`` and its matching ``)`` (looked for before
    ``end``), or None."""
    depth = 1
    for match in _BRACKET.finditer(source, start, min(end, start + MAX_HEADER_CHARS)):
        depth += 1 if match.group() in "([{" else -1
        if depth == 0:
            return source[start : match.start()]
    return None


@functools.lru_cache(maxsize=4096)  # headers rarely change between scans
def _names_a_function(bases: str) -> bool:
    """Whether a class with these bases (the text between its parentheses) is a Function."""
    try:
        header = ast.parse(f"class _({bases}):\n    pass\n").body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(ast.unparse(base).split(".")[-1] in FUNCTION_BASES for base in header.bases)


def scan_function_names(source: str, *, cancelled: Callable[[], bool] | None = None) -> list[str]:
    """Top-level classes whose base is an autograd Function (``Function``, ``InplaceFunction``,
    spelt plainly or dotted), in file order, then top-level custom ops (``@torch.library.custom_op("ns::name"``);
    found without running or parsing the module.

    Linear in the text: a header's bases end before the next header (a ``class`` keyword cannot
    stand inside them). ``cancelled`` is asked every millisecond or so; when it says True the
    scan stops with ScanCancelled."""
    names = []
    headers = _CLASS_HEADER.finditer(source)
    match = next(headers, None)
    checked = time.perf_counter()
    while match is not None:
        following = next(headers, None)
        end = following.start() if following is not None else len(source)
        bases = _bases_text(source, match.end(), end)
        # a class whose bases never name Function is no Function: ast is asked only about the rest
        if bases is not None and "Function" in bases and _names_a_function(bases):
            names.append(match.group(1))
        match = following
        if time.perf_counter() - checked > YIELD_EVERY_S:
            time.sleep(0)  # the window, waiting for the interpreter, takes it now
            if cancelled is not None and cancelled():
                raise ScanCancelled
            checked = time.perf_counter()
    return names + _CUSTOM_OP.findall(source)  # the worker's order: Functions, then custom ops


class FunctionListUpdater(QObject):
    """Emits ``found(names)`` for the editor's text a moment after it changes; one scan at a time."""

    found = Signal(list)

    def __init__(self, text: Callable[[], str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._text = text
        self._latest = 0  # the newest scan asked for: older answers are dropped, older scans stop
        self._running = False  # a scan thread has not answered yet
        self._again = False  # a scan was asked for while one ran: it starts when that one answers
        self._size = 0  # the length of the text read last
        self._shown: list[str] | None = None  # the last list emitted (an unchanged one is not sent again)
        self._timer = QTimer(self, singleShot=True, interval=REPARSE_DELAY_MS)
        self._timer.timeout.connect(self._scan)

    def text_changed(self) -> None:
        """The text changed: scan it when the timer fires (started by the first change of a
        burst, so a long burst of keys still updates the list a few times a second). A text
        too long to follow live waits for the next ``scan_now``."""
        if self._size > LIVE_SCAN_CHARS:
            return
        if not self._timer.isActive():
            self._timer.start()

    def scan_now(self) -> None:
        """A new document: scan it at once (still off the GUI thread); pending answers are dropped."""
        self._timer.stop()
        self._shown = None
        self._scan()

    def stop(self) -> None:
        """No more answers (a built-in shows its own list; the window closes)."""
        self._timer.stop()
        self._again = False
        self._latest += 1

    @property
    def pending(self) -> bool:
        """A scan is due or running (tests wait for False)."""
        return self._timer.isActive() or self._running

    @property
    def running(self) -> bool:
        """A scan thread has not answered yet (never more than one)."""
        return self._running

    def _scan(self) -> None:
        self._latest += 1  # a running scan sees this and stops
        if self._running:
            self._again = True  # the newest text is read when the running scan has answered
            return
        ticket = self._latest
        text = self._text()
        self._size = len(text)
        self._running = True
        run_in_thread(
            functools.partial(scan_function_names, cancelled=lambda: ticket != self._latest),
            text,
            done=lambda names: self._answer(ticket, names),
            failed=lambda _error: self._answer(ticket, []),
            name="gradviz-function-list",
        )

    def _answer(self, ticket: int, names: list[str]) -> None:
        self._running = False
        if self._again:
            self._again = False
            self._scan()
        elif ticket == self._latest and names != self._shown:
            self._shown = names
            self.found.emit(names)


__all__ = ["FunctionListUpdater", "ScanCancelled", "scan_function_names"]
