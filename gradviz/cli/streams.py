"""The command line's standard streams, made safe before anything is printed.

- A closed stream (``2>&-``, ``>&-``): its file descriptor is filled with ``/dev/null``, so the next
  file gradviz opens cannot become "stderr" by taking the free number, and a closed stderr swallows
  the error lines (``print(file=None)`` would send them to stdout, before the JSON document). A
  closed stdout stays ``None``: the command then says it has nowhere to print the verdict.
- A stream that cannot encode every character (``PYTHONIOENCODING=ascii``, a latin-1 terminal):
  the characters degrade (``≈`` -> ``~``, ``·`` -> ``.``, others as ``\\u2248``), never the
  verdict. JSON documents are ASCII already.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
import unicodedata

ERRORS = "gradviz-ascii"  # the codec error handler registered below

# the characters gradviz itself prints, and what an ASCII-only stream shows instead
FALLBACKS = {
    "≈": "~",
    "·": ".",
    "×": "x",
    "…": "...",
    "—": "--",
    "–": "-",
    "→": "->",
    "←": "<-",
    "≤": "<=",
    "≥": ">=",
    "±": "+/-",
    "∂": "d",
    "Δ": "D",
    "ε": "eps",
    "ᵀ": "^T",
    "²": "^2",
    "√": "sqrt",
    "−": "-",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "✓": "ok",
    "✗": "x",
    "█": "#",
    "░": ".",
    "▏": "|",
}


def _ascii_fallback(error: UnicodeError) -> tuple[str, int]:
    """A codec error handler: the unencodable run of characters as close ASCII, else escaped."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    shown = []
    for char in error.object[error.start : error.end]:
        if char in FALLBACKS:
            shown.append(FALLBACKS[char])
            continue
        plain = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
        shown.append(plain or char.encode("ascii", "backslashreplace").decode("ascii"))
    return "".join(shown), error.end


codecs.register_error(ERRORS, _ascii_fallback)


def prepare_streams() -> None:
    """Fill closed standard file descriptors and let stdout and stderr degrade characters they
    cannot encode; called once, first thing in ``main``."""
    for fd in (0, 1, 2):
        _fill_if_closed(fd)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # for the process's life
    for stream in (sys.stdout, sys.stderr):
        _degrade(stream)


def _fill_if_closed(fd: int) -> None:
    try:
        os.fstat(fd)
        return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)


def _degrade(stream: object) -> None:
    """``stream``'s unencodable characters through ``ERRORS`` (strict streams only: a user's own
    ``PYTHONIOENCODING=ascii:replace`` is kept)."""
    if not isinstance(stream, io.TextIOWrapper) or stream.errors != "strict":
        return
    if (stream.encoding or "").lower().replace("-", "").replace("_", "") in ("utf8", "utf8sig"):
        return
    with contextlib.suppress(ValueError, OSError):
        stream.reconfigure(errors=ERRORS)
