"""Crash recovery: unsaved editor text is written to a recovery file a moment after each change,
and removed on a clean exit. A file whose window is gone means gradviz (or the machine) died
with unsaved work, and the next launch offers it back.

Each window keys its file by a random id (never the process id: in a container every launch
may get the same pid) and holds an exclusive lock on a companion ``.lock`` file while it lives
(``protocol.owner_lock``); the OS drops the lock when the process dies, even by ``kill -9``, so "locked" means "its
window is alive" and "unlocked" means "left behind". A later window claims a left-behind file
by taking its lock before it restores or deletes it, so two windows never restore the same text.

A recovery file is a one-line JSON header (title, path, time, the text's length in bytes) and the
raw UTF-8 text after it: a list of thousands reads only headers, and a 50 MB text is copied or
decoded straight from the file, never parsed as JSON. It lives in the user's state directory
(platformdirs), written atomically (``gradviz.schema.atomic_write``). When that folder
refuses (read-only, full), the text goes to the next folder that takes it (the per-user runtime
folder, then a private folder under the temp dir); the next launch looks in all of them.
Everything read back is checked: a damaged file is set aside (renamed ``damaged-…``) and named,
never fatal and never read again.
"""

from __future__ import annotations

import errno
import getpass
import json
import math
import os
import stat
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from gradviz.protocol import owner_lock
from gradviz.schema.atomic_write import atomic_writer
from gradviz.schema.source_files import MAX_SOURCE_BYTES
from gradviz.schema.units import format_bytes

if TYPE_CHECKING:
    import filelock

RECOVERY_ENV = "GRADVIZ_RECOVERY_DIR"  # tests: a folder, or several joined by os.pathsep (first preferred)
MAX_RECOVERY_BYTES = 8 * MAX_SOURCE_BYTES  # a format 1 file escaped non-ASCII text (up to 6 bytes a character)
MAX_HEADER_BYTES = 64 * 2**10
MAX_TEXT_BYTES = MAX_RECOVERY_BYTES - MAX_HEADER_BYTES  # a longer text is not kept: the user is told to save it
PREFIX, SUFFIX = "recovery-", ".json"
FORMAT = "gradviz-recovery"
MAGIC = b'{"format": "gradviz-recovery"'  # format 2: this JSON header on one line, then the raw UTF-8 text


def recovery_dirs() -> list[Path]:
    """Where recovery files go, the preferred folder first."""
    override = os.environ.get(RECOVERY_ENV)
    if override:
        return [Path(p) for p in override.split(os.pathsep) if p]
    folders = [Path(platformdirs.user_state_dir("gradviz")) / "recovery"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        folders.append(Path(runtime) / "gradviz-recovery")
    user = os.getuid() if hasattr(os, "getuid") else getpass.getuser()  # Windows has no uid
    folders.append(Path(tempfile.gettempdir()) / f"gradviz-recovery-{user}")
    return folders


def recovery_dir() -> Path:
    """The preferred folder."""
    return recovery_dirs()[0]


class Recovered:
    """A text a window that is gone left behind. Only its header is read when it is listed (a
    list of 2000 costs 2000 small reads); the text itself is read when it is restored, saved or
    previewed."""

    def __init__(
        self, title: str, path: str | None, saved_at: float, file: Path, *, size: int, offset: int,
        text: str | None = None,
    ) -> None:  # fmt: skip
        self.title, self.path, self.saved_at, self.file = title, path, saved_at, file
        self.size = size  # bytes of UTF-8 text
        self._offset = offset  # where the text starts in the file (format 2)
        self._text = text  # an old (format 1) file's text, already parsed
        self.lock: filelock.BaseFileLock | None = None  # our claim on it while we act on it

    @property
    def key(self) -> str:
        return self.file.name[len(PREFIX) : -len(SUFFIX)]

    @property
    def text(self) -> str:
        """The whole text, read now; RecoveryDamaged if it is no longer what the header said."""
        if self._text is not None:
            return self._text
        try:
            return self.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise RecoveryDamaged("its text is not UTF-8") from None

    def read_bytes(self) -> bytes:
        if self._text is not None:
            return self._text.encode("utf-8", "surrogatepass")
        with self._open() as f:
            data = f.read(self.size + 1)
        if len(data) != self.size:
            raise RecoveryDamaged(f"its text is {len(data):,} bytes, not the {self.size:,} its header says")
        return data

    def copy_to(self, out, chunk: int = 2**20) -> None:
        """Write the text's bytes to the binary file ``out`` a chunk at a time (a 50 MB text
        never sits in memory whole)."""
        if self._text is not None:
            out.write(self.read_bytes())
            return
        left = self.size
        with self._open() as f:
            while left > 0:
                data = f.read(min(chunk, left))
                if not data:
                    raise RecoveryDamaged("its text ends early")
                out.write(data)
                left -= len(data)

    def preview(self, limit: int = 4096) -> str:
        """The start of the text, for the list (a cut character shows as �)."""
        if self._text is not None:
            return self._text[:limit]
        try:
            with self._open() as f:
                return f.read(min(limit, self.size)).decode("utf-8", "replace")
        except (OSError, RecoveryDamaged) as exc:
            return f"(cannot be read: {exc})"

    def _open(self):
        try:
            fd = os.open(self.file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise RecoveryDamaged(f"it cannot be read ({_reason(exc)})") from None
        f = os.fdopen(fd, "rb")
        f.seek(self._offset)
        return f

    def __repr__(self) -> str:
        return f"Recovered({self.title!r}, {self.file})"


class RecoveryStore:
    """This window's recovery file, and the ones windows that are gone left behind."""

    def __init__(self, directory: Path | list[Path] | None = None, key: str | None = None) -> None:
        if directory is None:
            self.directories = recovery_dirs()
        else:
            self.directories = [Path(directory)] if isinstance(directory, str | Path) else list(directory)
        self.key = key or f"w{uuid.uuid4().hex}"  # never all digits: those are an old gradviz's pids
        self._where = 0  # which folder this window writes to
        self._lock: filelock.BaseFileLock | None = None
        self._locked_in: Path | None = None
        self.refusals: dict[Path, str] = {}  # folder -> why it would not take the text

    # --- this window's file ----------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return self.directories[min(self._where, len(self.directories) - 1)]

    @property
    def file(self) -> Path:
        return self.directory / f"{PREFIX}{self.key}{SUFFIX}"

    @property
    def preferred(self) -> Path:
        return self.directories[0]

    @property
    def failing(self) -> bool:
        """No folder takes the text: unsaved work is not being kept."""
        return self._where >= len(self.directories)

    def write(self, text: str, title: str, path: str | None) -> bool:
        """Keep ``text`` in the first folder that takes it, moving on when one refuses; False
        when none does (``refusals`` says why, per folder)."""
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) > MAX_TEXT_BYTES:
            raise TextTooLarge(len(raw))
        header = {"format": FORMAT, "version": 2, "key": self.key, "title": title, "path": path,
                  "saved_at": time.time(), "text_bytes": len(raw)}  # fmt: skip
        data = (json.dumps(header) + "\n").encode("ascii")
        if self.failing:  # every folder refused last time: try them all again
            self._where = 0
        while self._where < len(self.directories):
            folder = self.directories[self._where]
            try:
                self._write_in(folder, data, raw)
            except OSError as exc:
                self.refusals[folder] = _reason(exc)
                self._release_lock(delete=True)
                self._where += 1
                continue
            self.refusals.pop(folder, None)
            for earlier in self.directories[: self._where]:  # an older copy must not be offered
                _unlink_quietly(earlier / f"{PREFIX}{self.key}{SUFFIX}")
            return True
        return False

    def _write_in(self, folder: Path, header: bytes, raw: bytes) -> None:
        _private_folder(folder)
        if self._locked_in != folder:
            self._release_lock(delete=True)
            self._take_lock(folder)
        with atomic_writer(folder / f"{PREFIX}{self.key}{SUFFIX}", mode=0o600) as f:
            f.write(header)
            f.write(raw)

    def _take_lock(self, folder: Path) -> None:
        try:
            self._lock = owner_lock.take(folder / f"{PREFIX}{self.key}.lock")
        except owner_lock.Held as exc:  # a random key: only another store with our key holds it
            raise OSError(errno.EBUSY, "another window holds this recovery file", str(exc)) from None
        self._locked_in = folder

    def _release_lock(self, *, delete: bool) -> None:
        if self._lock is None:
            return
        owner_lock.drop(self._lock, delete=delete)
        self._lock = self._locked_in = None

    def clear(self) -> None:
        """The text is saved or discarded: no copy stays behind."""
        for folder in self.directories:
            _unlink_quietly(folder / f"{PREFIX}{self.key}{SUFFIX}")
        self._release_lock(delete=True)

    # --- what others left behind -------------------------------------------------------------
    def orphans(self) -> tuple[list[Recovered], list[str]]:
        """Recovery files whose window is gone, newest first; and a sentence for each damaged
        file set aside. Nothing is claimed yet (2000 files must not hold 2000 descriptors):
        ``claim`` takes one before it is restored or discarded."""
        found: list[Recovered] = []
        problems: list[str] = []
        for folder in self.directories:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                if not (name.startswith(PREFIX) and name.endswith(SUFFIX)):
                    continue
                key = name[len(PREFIX) : -len(SUFFIX)]
                if key == self.key:
                    continue
                claim = _claim(folder, key)
                if claim is False:
                    continue  # its window is alive
                file = folder / name
                try:
                    found.append(read_recovery(file))
                except RecoveryDamaged as exc:
                    problems.append(_set_aside(file, str(exc)))
                    _unclaim(folder, key, claim, delete=True)
                    continue
                _unclaim(folder, key, claim, delete=False)
        return sorted(found, key=lambda r: r.saved_at, reverse=True), problems

    @staticmethod
    def claim(recovered: Recovered) -> bool:
        """Take a left-behind file for this window (until ``discard`` or ``release``); False
        when another window took it meanwhile or it is gone."""
        if recovered.lock is not None:
            return True
        claim = _claim(recovered.file.parent, recovered.key)
        if claim is False:
            return False
        if not recovered.file.exists():
            _unclaim(recovered.file.parent, recovered.key, claim, delete=False)
            return False
        recovered.lock = claim if not isinstance(claim, bool) else None
        return True

    @staticmethod
    def discard(recovered: Recovered) -> bool:
        """Delete a left-behind file (restored into this window, saved elsewhere, or declined);
        False when another window holds it now (nothing is deleted then)."""
        if not RecoveryStore.claim(recovered) and recovered.file.exists():
            return False
        _unlink_quietly(recovered.file)
        _unclaim(recovered.file.parent, recovered.key, recovered.lock, delete=True)
        recovered.lock = None
        return True

    def __repr__(self) -> str:
        return f"RecoveryStore({self.file})"


class RecoveryDamaged(ValueError):
    """A recovery file that cannot be read back as one."""


class TextTooLarge(ValueError):
    """A text too big to keep as a recovery copy."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{format_bytes(size)} of text")
        self.size = size


def read_recovery(file: Path) -> Recovered:
    """A recovery file's header, checked: a regular file of sane size, the right types, the
    text as long as the header says (format 2); format 1 files (one JSON object) are read whole."""
    try:
        info = os.lstat(file)
        if not stat.S_ISREG(info.st_mode):
            raise RecoveryDamaged("it is not a regular file")
        if info.st_size > MAX_RECOVERY_BYTES:
            raise RecoveryDamaged(f"it is {format_bytes(info.st_size)}, more than a recovery file holds")
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            first = f.readline(MAX_HEADER_BYTES + 1)
            if first.startswith(MAGIC):
                return _read_header(file, first, os.fstat(f.fileno()).st_size)
            raw = first + f.read(MAX_RECOVERY_BYTES + 1 - len(first))
    except OSError as exc:
        raise RecoveryDamaged(f"it cannot be read ({_reason(exc)})") from None
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise RecoveryDamaged("it is not UTF-8 text") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RecoveryDamaged(f"it is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise RecoveryDamaged("it holds no recovery record")
    text = data.get("text")
    if not isinstance(text, str):
        raise RecoveryDamaged('its "text" or "title" is not text')
    title, path, saved_at = _checked(data)
    return Recovered(title, path, saved_at, file, size=len(text.encode("utf-8", "surrogatepass")), offset=0, text=text)


def _read_header(file: Path, line: bytes, file_size: int) -> Recovered:
    if not line.endswith(b"\n"):
        raise RecoveryDamaged("its header is cut short")
    try:
        data = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise RecoveryDamaged(f"its header is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("version") != 2:
        raise RecoveryDamaged("its header is not one this gradviz reads")
    size = data.get("text_bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RecoveryDamaged('its "text_bytes" is not a size')
    if len(line) + size != file_size:
        raise RecoveryDamaged(f"it holds {file_size - len(line):,} bytes of text, not the {size:,} its header says")
    title, path, saved_at = _checked(data)
    return Recovered(title, path, saved_at, file, size=size, offset=len(line))


def _checked(data: dict) -> tuple[str, str | None, float]:
    title, path, saved_at = (data.get(k) for k in ("title", "path", "saved_at"))
    if not isinstance(title, str):
        raise RecoveryDamaged('its "text" or "title" is not text')
    if path is not None and (not isinstance(path, str) or "\0" in path or not path):
        raise RecoveryDamaged('its "path" is not a file path')
    if isinstance(saved_at, bool) or not isinstance(saved_at, int | float) or not math.isfinite(saved_at):
        raise RecoveryDamaged('its "saved_at" is not a time')
    return title[:200], path, float(saved_at)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _claim(folder: Path, key: str) -> filelock.BaseFileLock | bool:
    """Lock a left-behind file's ``.lock``: the lock when we hold it now, True when there is no
    lock file (an old gradviz's file, keyed by a process id that is gone), False when its window
    is alive."""
    if key.isdigit():  # written by a gradviz before the locks: keyed by its process id
        return not _pid_alive(int(key))
    lock_file = folder / f"{PREFIX}{key}.lock"
    try:
        if stat.S_ISLNK(os.lstat(lock_file).st_mode):
            return False  # not one a window made: leave it alone
    except FileNotFoundError:
        return True  # the window died between writing its text and its lock, or the lock was removed
    except OSError:
        return False
    try:
        return owner_lock.take(lock_file)
    except (owner_lock.Held, OSError):
        return False


def _unclaim(folder: Path, key: str, claim: filelock.BaseFileLock | bool | None, *, delete: bool) -> None:
    if claim is not None and not isinstance(claim, bool):
        owner_lock.drop(claim, delete=delete)


def release(recovered: Recovered) -> None:
    """Give up the claim on a left-behind file without deleting it (another launch may offer it)."""
    key = recovered.file.name[len(PREFIX) : -len(SUFFIX)]
    _unclaim(recovered.file.parent, key, recovered.lock, delete=False)
    recovered.lock = None


def _pid_alive(pid: int) -> bool:
    if pid <= 0 or os.name == "nt":  # pid-keyed files come from old POSIX gradviz; Windows' kill(pid, 0) is Ctrl+C
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _set_aside(file: Path, why: str) -> str:
    """Rename a damaged file so it is never read again; the sentence that says so."""
    aside = file.with_name(f"damaged-{file.name}")
    try:
        file.rename(aside)
    except OSError:
        return f"A damaged recovery file was ignored: {file} ({why})."
    return f"A damaged recovery file was set aside: {file} ({why}); it is now {aside.name}."


def _private_folder(folder: Path) -> None:
    """Create ``folder`` (mode 0700); refuse one that is a link or belongs to someone else (a
    shared temp dir must not hand our text to another user)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(errno.ENOTDIR, "not a folder", str(folder))
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise OSError(errno.EPERM, "the folder belongs to another user", str(folder))


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return exc.strerror.lower() if exc.strerror else "not writable"
    return (exc.strerror or str(exc)).lower()


__all__ = [
    "Recovered", "RecoveryDamaged", "RecoveryStore", "TextTooLarge", "read_recovery", "recovery_dir", "recovery_dirs",
    "release",
]  # fmt: skip
