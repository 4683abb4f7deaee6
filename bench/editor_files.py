"""Files that can freeze an editor, written for real by the bench and
the tests: a 10 MiB file that is one line, and 2 MB of unclosed ``class A(`` headers."""

from __future__ import annotations

from pathlib import Path

LONG_LINE_BYTES = 10 * 2**20 - 64  # just under the 10 MiB gradviz reads as source code
CLASS_HEADERS_BYTES = 2_000_000


def long_line_text(size: int = LONG_LINE_BYTES) -> str:
    """One line of Python (a list literal) ``size`` characters long, no newline."""
    head, item = "data = [", "1234, "
    body = item * ((size - len(head) - 1) // len(item))
    return head + body + "]" + " " * (size - len(head) - len(body) - 1)


def class_headers_text(size: int = CLASS_HEADERS_BYTES) -> str:
    """``class A(`` lines, never closed, ``size`` characters in all."""
    line = "class A(\n"
    return line * (size // len(line))


def write_long_line(folder: Path, size: int = LONG_LINE_BYTES) -> Path:
    path = Path(folder) / "one_line.py"
    path.write_text(long_line_text(size), encoding="utf-8")
    return path


def write_class_headers(folder: Path, size: int = CLASS_HEADERS_BYTES) -> Path:
    path = Path(folder) / "class_headers.py"
    path.write_text(class_headers_text(size), encoding="utf-8")
    return path
