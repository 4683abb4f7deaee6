"""What a file on disk was when gradviz read or wrote it, so a save can tell that another program
changed it, deleted it or replaced it by a symbolic link since, and ask before writing.

The stamp is taken *before* the bytes are read (a change during the read then shows up as a
newer mtime) and holds a hash of the bytes gradviz has: an mtime that moved with the same
contents (``touch``, a checkout of the same text) is not a change worth asking about.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FileStamp", "change_since", "stamp_of"]

_HASH_LIMIT = 256 * 2**20  # past this a changed size or mtime is enough to ask


@dataclass(frozen=True)
class FileStamp:
    path: str  # the path as opened (absolute, links not resolved)
    link: str | None  # where it pointed when it was a symbolic link; None for a plain file
    device: int
    inode: int
    size: int
    mtime_ns: int
    sha256: str  # of the bytes gradviz read or wrote

    @property
    def write_to(self) -> Path:
        """Where a save writes: the file itself, or the target of the link it was opened as."""
        if self.link is None:
            return Path(self.path)
        return Path(os.path.join(os.path.dirname(self.path), self.link))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stamp_of(path: str | Path, data: bytes, before: os.stat_result | None = None) -> FileStamp:
    """The stamp of ``path`` holding ``data``; ``before``: its ``os.stat`` taken before ``data``
    was read (taken now when omitted, right after a write)."""
    path = os.path.abspath(path)
    link = os.readlink(path) if os.path.islink(path) else None
    info = before if before is not None else os.stat(path)
    return FileStamp(path, link, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, _digest(data))


def change_since(stamp: FileStamp) -> str | None:
    """How the file changed on disk since ``stamp``, in words for the user; None when it holds
    what gradviz read or wrote."""
    path = stamp.path
    try:
        own = os.lstat(path)
    except FileNotFoundError:
        return "it was deleted or moved away"
    except OSError as exc:
        return f"it cannot be checked ({exc.strerror or exc})"
    if stat.S_ISLNK(own.st_mode):
        target = os.readlink(path)
        if stamp.link is None:
            return f"it was replaced by a symbolic link to {target}"
        if target != stamp.link:
            return f"the symbolic link now points to {target} (it pointed to {stamp.link})"
    elif stamp.link is not None:
        return "it was a symbolic link and is now a file of its own"
    try:
        info = os.stat(path)
    except OSError:
        return "it was deleted or moved away (its symbolic link points nowhere now)"
    if not stat.S_ISREG(info.st_mode):
        return "it is no longer a regular file"
    if (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns) == (
        stamp.device, stamp.inode, stamp.size, stamp.mtime_ns
    ):
        return None
    if info.st_size != stamp.size or info.st_size > _HASH_LIMIT:
        return "another program changed it"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            now = f.read(_HASH_LIMIT + 1)
    except OSError as exc:
        return f"it cannot be read to compare ({exc.strerror or exc})"
    return None if _digest(now) == stamp.sha256 else "another program changed it"
