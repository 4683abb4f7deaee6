"""Writing a file so that a failure leaves the old one whole: the one way gradviz writes files
the user keeps (the editor's Save, sessions) and its recovery copies.

The new bytes go to a temporary file beside the target, are flushed and fsynced, and the
temporary file is renamed over the target (``os.replace``, atomic on POSIX and Windows); then
the folder is fsynced where the platform allows it, so the rename itself survives a power cut.
A full disk, a quota or a read-only folder fails before the rename: the old file is untouched
and the temporary file is removed. This is what Qt's ``QSaveFile`` does, here without Qt so the
schema, the CLI and the library can use it.

The rename replaces the path itself: when the path is a symbolic link, the link is replaced by a
regular file and whatever it pointed to is not written. Callers that mean to write through a
link they know about pass its target.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_writer", "current_umask", "os_reason", "write_atomically"]


@contextmanager
def atomic_writer(path: str | Path, *, mode: int | None = None, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write the new contents of ``path`` into; they replace ``path`` when the
    block ends without an exception, and never otherwise.

    ``mode``: the permission bits of the new file (default: those of the file it replaces, else
    0o666 less the umask). ``durable``: fsync the data and the folder (a crash of the machine
    then leaves the old or the new file, never an empty one).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    if mode is None:
        mode = _mode_of(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        _fsync_folder(path.parent)


def write_atomically(path: str | Path, data: bytes | str, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) all at once, or raise OSError
    and leave it as it was."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_writer(path, mode=mode, durable=durable) as f:
        f.write(raw)


def os_reason(exc: BaseException) -> str:
    """Why a write failed, in the system's own words ("No space left on device")."""
    if isinstance(exc, OSError):
        if exc.strerror:
            return exc.strerror
        if exc.errno:
            return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _mode_of(path: Path) -> int:
    """The permission bits the new file gets: the old file's (a link's own are meaningless:
    it is replaced, not written through), else what a fresh file would get."""
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode):
            return stat.S_IMODE(info.st_mode)
    except OSError:
        pass
    return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows (``os.umask`` sets it
    for every thread for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable; skipped where folders cannot be opened (Windows) or synced."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # the new file is in place; only the rename's durability across a power cut is in doubt
    finally:
        os.close(fd)
