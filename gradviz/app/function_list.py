"""The Function list of the text being edited, kept current without slowing the typing.

A change starts a short timer and the list is found again when it fires, so the text is scanned
at most a few times a second however fast the keys come, and on a thread of its own. The scan
reads top-level class headers (``class Name(bases):``), never the whole module: ``ast.parse`` of
a 10,000-line file holds the interpreter, and with it the window, for a tenth of a second. The
rule is ``function_names``'s; the worker's exact list replaces this one after a run.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from gradviz.app.background import run_in_thread

REPARSE_DELAY_MS = 300  # the list follows the text at most this long after a change
FUNCTION_BASES = ("Function", "InplaceFunction")
MAX_HEADER_CHARS = 4000  # bases longer than this are not a Function's
_CLASS_HEADER = re.compile(r"^class[ \t]+(\w+)[ \t]*\(", re.MULTILINE)


def _bases_text(source: str, start: int) -> str | None:
    """The text between the ``(`` before ``start`` and its matching ``)``, or None."""
    depth = 1
    for k in range(start, min(len(source), start + MAX_HEADER_CHARS)):
        char = source[k]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return source[start:k]
    return None


@functools.lru_cache(maxsize=4096)  # headers rarely change between scans
def _names_a_function(bases: str) -> bool:
    """Whether a class with these bases (the text between its parentheses) is a Function."""
    try:
        header = ast.parse(f"class _({bases}):\n    pass\n").body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(ast.unparse(base).split(".")[-1] in FUNCTION_BASES for base in header.bases)


def scan_function_names(source: str) -> list[str]:
    """Top-level classes whose base is an autograd Function (``Function``, ``InplaceFunction``,
    spelt plainly or dotted), in file order; found without running or parsing the module."""
    names = []
    for match in _CLASS_HEADER.finditer(source):
        bases = _bases_text(source, match.end())
        if bases is not None and _names_a_function(bases):
            names.append(match.group(1))
    return names


class FunctionListUpdater(QObject):
    """Emits ``found(names)`` for the editor's text a moment after it changes."""

    found = Signal(list)

    def __init__(self, text: Callable[[], str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._text = text
        self._latest = 0  # the newest scan asked for: older answers are dropped
        self._shown: list[str] | None = None  # the last list emitted (an unchanged one is not sent again)
        self._timer = QTimer(self, singleShot=True, interval=REPARSE_DELAY_MS)
        self._timer.timeout.connect(self._scan)

    def text_changed(self) -> None:
        """The text changed: scan it when the timer fires (started by the first change of a
        burst, so a long burst of keys still updates the list a few times a second)."""
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
        self._latest += 1

    @property
    def pending(self) -> bool:
        return self._timer.isActive()

    def _scan(self) -> None:
        self._latest += 1
        ticket = self._latest
        run_in_thread(
            scan_function_names,
            self._text(),
            done=lambda names: self._answer(ticket, names),
            failed=lambda _error: self._answer(ticket, []),
            name="gradviz-function-list",
        )

    def _answer(self, ticket: int, names: list[str]) -> None:
        if ticket == self._latest and names != self._shown:
            self._shown = names
            self.found.emit(names)


__all__ = ["FunctionListUpdater", "scan_function_names"]
