"""Reading a user's source file safely: the kind and size are checked before a byte is read.

A FIFO would block the reader forever, ``/dev/zero`` would be read until memory runs out, a
directory or a symlink loop gives an OS error; each is refused with a sentence that says what
the path is. The check runs again on the opened descriptor, so a file swapped between the
check and the open is caught too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from gradviz.schema.errors import ErrorKind, UserCodeError
from gradviz.schema.units import format_bytes

MAX_SOURCE_BYTES = 10 * 2**20


def _refuse(path: Path, why: str) -> UserCodeError:
    return UserCodeError(ErrorKind.IMPORT, f"Cannot read {path}: {why}", str(path))


def _check_stat(
    path: Path, info: os.stat_result, max_bytes: int = MAX_SOURCE_BYTES, what: str = "a Python file"
) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise _refuse(path, f"it is a directory, not {what}.")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise _refuse(path, f"it is {kind}, not a regular file; gradviz reads only regular files.")
    if info.st_size > max_bytes:
        raise _refuse(
            path,
            f"it is {format_bytes(info.st_size)}, more than the {format_bytes(max_bytes)} gradviz "
            f"reads as {_reads_as(what)}.",
        )


def check_source_file(path: str | Path, max_bytes: int = MAX_SOURCE_BYTES, what: str = "a Python file") -> Path:
    """The path, after checking it names a regular file of sane size; UserCodeError otherwise."""
    path = Path(path)
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise _refuse(path, _os_reason(exc)) from None
    _check_stat(path, info, max_bytes, what)
    return path


def read_regular_bytes(path: str | Path, max_bytes: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, checked before a byte is read
    (``what`` names what the file should be, for the refusal)."""
    path = check_source_file(path, max_bytes, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _refuse(path, _os_reason(exc)) from None
    with os.fdopen(fd, "rb") as f:
        _check_stat(path, os.fstat(f.fileno()), max_bytes, what)
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise _refuse(path, _os_reason(exc)) from None
    if len(data) > max_bytes:
        raise _refuse(path, f"it is larger than the {format_bytes(max_bytes)} gradviz reads as {_reads_as(what)}.")
    return data


def read_source_bytes(path: str | Path) -> bytes:
    """The file's bytes, refusing anything but a regular file of at most MAX_SOURCE_BYTES."""
    return read_regular_bytes(path, MAX_SOURCE_BYTES, "a Python file")


def read_source_text(path: str | Path) -> str:
    """The file as UTF-8 text; a decoding error names the line and the byte."""
    raw = read_source_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UserCodeError(
            ErrorKind.IMPORT,
            f"The file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}). "
            "Save it as UTF-8 and try again.",
            str(path),
            line,
        ) from None


def _reads_as(what: str) -> str:
    return "source code" if what == "a Python file" else what


def _os_reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):
        return "the path holds a NUL character."
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop (a link that points back to itself)."
    if exc.errno == errno.ENOENT:
        return "no such file."
    return f"{exc.strerror or exc}."
