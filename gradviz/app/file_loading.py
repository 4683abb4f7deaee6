"""Reading what the user opens without freezing the window: the kind and size of the file are
checked before a byte is read, and both the check and the read run off the GUI thread.

A FIFO, ``/dev/zero``, a directory, a file over the size gradviz reads, a session of 100 MB:
each is refused at once with a sentence that says what the path is (``gradviz.schema``'s
checks, the worker's too). Only the newest request's answer is used: opening B while A is
still being read shows B, never A.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from gradviz.app.background import run_in_thread
from gradviz.app.editor_limits import long_line_refusal
from gradviz.schema.atomic_write import atomic_writer
from gradviz.schema.errors import GradvizError
from gradviz.schema.file_stamp import FileStamp, stamp_of
from gradviz.schema.session import Session, load_session
from gradviz.schema.source_files import read_source_bytes


class LoadRefused(Exception):
    """A file that cannot be shown; the message says why, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def read_source(path: Path) -> str:
    """A Python file as text, or LoadRefused saying why not."""
    try:
        raw = read_source_bytes(path)
    except GradvizError as exc:
        raise LoadRefused(exc.message) from None
    return _decoded(path, raw)


def read_source_stamped(path: Path) -> tuple[str, FileStamp]:
    """A Python file as text, with the stamp a later Save checks the file against (taken
    before the read: a change during it counts as a change)."""
    try:
        before = os.stat(path)
    except (OSError, ValueError):
        before = None  # read_source_bytes says why
    try:
        raw = read_source_bytes(path)
    except GradvizError as exc:
        raise LoadRefused(exc.message) from None
    return _decoded(path, raw), stamp_of(path, raw, before)


def _decoded(path: Path, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LoadRefused(
            f"Cannot open {path}: it is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}). "
            "Save it as UTF-8 and open it again."
        ) from None
    if (too_long := long_line_refusal(text, f"Cannot open {path}")) is not None:
        raise LoadRefused(too_long)  # the editor could not show it without seconds per key
    return text


def write_keeping_owner(path: Path, data: bytes) -> None:
    """Replace the file at ``path`` with ``data`` atomically, keeping its mode and (where the
    process may give files away: root, or a group it belongs to) its owner and group: a save by
    root of a user's file leaves it the user's. OSError when it cannot be written."""
    try:
        before = os.stat(path)
    except OSError:
        before = None  # a new file: the process's own
    with atomic_writer(path) as f:
        f.write(data)
        if before is not None and hasattr(os, "fchown"):
            _give_back(f.fileno(), before)


def _give_back(fd: int, before: os.stat_result) -> None:
    """The new file's owner and group as the old one's, as far as the process may set them."""
    if (before.st_uid, before.st_gid) == (os.fstat(fd).st_uid, os.fstat(fd).st_gid):
        return
    for uid, gid in ((before.st_uid, before.st_gid), (-1, before.st_gid)):
        try:
            os.fchown(fd, uid, gid)
            return
        except OSError:
            continue  # not root: keep what the process may keep


def read_session(path: Path) -> Session:
    """A session, validated completely, or LoadRefused saying why not."""
    try:
        session = load_session(path)
    except GradvizError as exc:
        raise LoadRefused(exc.message) from None
    if (too_long := long_line_refusal(session.code, f"Cannot open {path}")) is not None:
        raise LoadRefused(too_long)  # its code would freeze the editor
    return session


class FileLoader(QObject):
    """Reads one file at a time off the GUI thread; a newer request (or ``cancel``) makes the
    answer to an older one be dropped."""

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._latest = 0  # the newest request or cancel: answers to older ones are dropped
        self._last_load = 0  # the newest request
        self._delivering = False
        self._busy = False

    @property
    def busy(self) -> bool:
        return self._busy

    def load(
        self,
        read: Callable[[Path], Any],
        path: Path,
        done: Callable[[Any], None],
        refused: Callable[[str], None],
    ) -> None:
        """``read(path)`` on a thread; then ``done(value)`` or ``refused(message)`` here."""
        self._latest += 1
        ticket = self._last_load = self._latest
        self._set_busy(True)

        def answer(value: Any) -> None:
            if ticket == self._latest:
                self._deliver(ticket, lambda: done(value))

        def fail(error: BaseException) -> None:
            if ticket == self._latest:
                message = error.message if isinstance(error, LoadRefused) else f"Cannot open {path}: {error}."
                self._deliver(ticket, lambda: refused(message))

        run_in_thread(read, path, done=answer, failed=fail, name="gradviz-file-loading")

    def cancel(self) -> None:
        """Drop the answer to whatever is being read (another document replaced it)."""
        self._latest += 1
        if not self._delivering:  # while an answer is shown, busy ends once it is on screen
            self._set_busy(False)

    def _deliver(self, ticket: int, deliver: Callable[[], None]) -> None:
        """Hand an answer over; ``busy`` turns False only after it is shown (``when_idle``
        callers see the new document), unless the answer asked for another read."""
        self._delivering = True
        try:
            deliver()
        finally:
            self._delivering = False
            if self._last_load == ticket:
                self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)


__all__ = ["FileLoader", "LoadRefused", "read_session", "read_source", "read_source_stamped", "write_keeping_owner"]
