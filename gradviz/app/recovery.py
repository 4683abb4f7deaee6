"""Crash recovery: unsaved editor text is written to a recovery file a moment after each change,
and removed on a clean exit. A file whose window is gone means gradviz (or the machine) died
with unsaved work, and the next launch offers it back.

Each window keys its file by a random id (never the process id: in a container every launch
may get the same pid) and holds an exclusive lock on a companion ``.lock`` file while it lives;
the kernel drops the lock when the process dies, even by ``kill -9``, so "locked" means "its
window is alive" and "unlocked" means "left behind". A later window claims a left-behind file
by taking its lock, so two windows never offer the same text.

Plain JSON in the user's state directory (platformdirs), written atomically. When that folder
refuses (read-only, full), the text goes to the next folder that takes it (the per-user runtime
folder, then a private folder under the temp dir); the next launch looks in all of them.
Everything read back is checked: a damaged file is set aside (renamed ``damaged-…``) and named,
never fatal and never read again.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from gradviz.schema.source_files import MAX_SOURCE_BYTES
from gradviz.schema.units import format_bytes

RECOVERY_ENV = "GRADVIZ_RECOVERY_DIR"  # tests: a folder, or several joined by os.pathsep (first preferred)
MAX_RECOVERY_BYTES = 8 * MAX_SOURCE_BYTES  # JSON escapes non-ASCII text (up to 6 bytes a character)
PREFIX, SUFFIX = "recovery-", ".json"


def recovery_dirs() -> list[Path]:
    """Where recovery files go, the preferred folder first."""
    override = os.environ.get(RECOVERY_ENV)
    if override:
        return [Path(p) for p in override.split(os.pathsep) if p]
    folders = [Path(platformdirs.user_state_dir("gradviz")) / "recovery"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        folders.append(Path(runtime) / "gradviz-recovery")
    folders.append(Path(tempfile.gettempdir()) / f"gradviz-recovery-{os.getuid()}")
    return folders


def recovery_dir() -> Path:
    """The preferred folder."""
    return recovery_dirs()[0]


@dataclass
class Recovered:
    text: str
    title: str  # what the text was called: a file name, a built-in, untitled.py
    path: str | None  # its file, if it had one (a suggestion for Save: never written unasked)
    saved_at: float
    file: Path  # the recovery file itself
    lock_fd: int | None = field(default=None, repr=False)  # our claim on it while it is offered


class RecoveryStore:
    """This window's recovery file, and the ones windows that are gone left behind."""

    def __init__(self, directory: Path | list[Path] | None = None, key: str | None = None) -> None:
        if directory is None:
            self.directories = recovery_dirs()
        else:
            self.directories = [Path(directory)] if isinstance(directory, str | Path) else list(directory)
        self.key = key or f"w{uuid.uuid4().hex}"  # never all digits: those are an old gradviz's pids
        self._where = 0  # which folder this window writes to
        self._lock_fd: int | None = None
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
        data = json.dumps({"key": self.key, "text": text, "title": title, "path": path, "saved_at": time.time()})
        if self.failing:  # every folder refused last time: try them all again
            self._where = 0
        while self._where < len(self.directories):
            folder = self.directories[self._where]
            try:
                self._write_in(folder, data)
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

    def _write_in(self, folder: Path, data: str) -> None:
        _private_folder(folder)
        if self._locked_in != folder:
            self._release_lock(delete=True)
            self._take_lock(folder)
        target = folder / f"{PREFIX}{self.key}{SUFFIX}"
        tmp = folder / f".{PREFIX}{self.key}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(target)
        except OSError:
            _unlink_quietly(tmp)
            raise

    def _take_lock(self, folder: Path) -> None:
        fd = os.open(folder / f"{PREFIX}{self.key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        self._lock_fd, self._locked_in = fd, folder

    def _release_lock(self, *, delete: bool) -> None:
        if self._lock_fd is None:
            return
        if delete and self._locked_in is not None:
            _unlink_quietly(self._locked_in / f"{PREFIX}{self.key}.lock")
        os.close(self._lock_fd)
        self._lock_fd = self._locked_in = None

    def clear(self) -> None:
        """The text is saved or discarded: no copy stays behind."""
        for folder in self.directories:
            _unlink_quietly(folder / f"{PREFIX}{self.key}{SUFFIX}")
        self._release_lock(delete=True)

    # --- what others left behind -------------------------------------------------------------
    def orphans(self) -> tuple[list[Recovered], list[str]]:
        """Recovery files whose window is gone, newest first, each claimed (locked) by this
        window until ``discard`` or ``release``; and a sentence for each damaged file set aside."""
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
                file = folder / name
                claim = _claim(folder, key)
                if claim is False:
                    continue  # its window is alive
                try:
                    recovered = read_recovery(file)
                except RecoveryDamaged as exc:
                    problems.append(_set_aside(file, str(exc)))
                    _unclaim(folder, key, claim, delete=True)
                    continue
                recovered.lock_fd = claim if isinstance(claim, int) else None
                found.append(recovered)
        return sorted(found, key=lambda r: r.saved_at, reverse=True), problems

    @staticmethod
    def discard(recovered: Recovered) -> None:
        """Delete a left-behind file (restored into this window, or declined)."""
        _unlink_quietly(recovered.file)
        key = recovered.file.name[len(PREFIX) : -len(SUFFIX)]
        _unclaim(recovered.file.parent, key, recovered.lock_fd, delete=True)
        recovered.lock_fd = None

    def __repr__(self) -> str:
        return f"RecoveryStore({self.file})"


class RecoveryDamaged(ValueError):
    """A recovery file that cannot be read back as one."""


def read_recovery(file: Path) -> Recovered:
    """A recovery file, checked: a regular file of sane size, UTF-8 JSON, the right types."""
    try:
        info = os.lstat(file)
        if not stat.S_ISREG(info.st_mode):
            raise RecoveryDamaged("it is not a regular file")
        if info.st_size > MAX_RECOVERY_BYTES:
            raise RecoveryDamaged(f"it is {format_bytes(info.st_size)}, more than a recovery file holds")
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_RECOVERY_BYTES + 1)
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
    text, title, path, saved_at = (data.get(k) for k in ("text", "title", "path", "saved_at"))
    if not isinstance(text, str) or not isinstance(title, str):
        raise RecoveryDamaged('its "text" or "title" is not text')
    if path is not None and (not isinstance(path, str) or "\0" in path or not path):
        raise RecoveryDamaged('its "path" is not a file path')
    if isinstance(saved_at, bool) or not isinstance(saved_at, int | float) or not math.isfinite(saved_at):
        raise RecoveryDamaged('its "saved_at" is not a time')
    return Recovered(text, title[:200], path, float(saved_at), file)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _claim(folder: Path, key: str) -> int | bool:
    """Lock a left-behind file's ``.lock``: its descriptor when we hold it now, True when there
    is no lock file (an old gradviz's file, keyed by a process id that is gone), False when its
    window is alive."""
    if key.isdigit():  # written by a gradviz before the locks: keyed by its process id
        return not _pid_alive(int(key))
    try:
        fd = os.open(folder / f"{PREFIX}{key}.lock", os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return True  # the window died between writing its text and its lock, or the lock was removed
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return fd


def _unclaim(folder: Path, key: str, claim: int | bool | None, *, delete: bool) -> None:
    if isinstance(claim, int) and not isinstance(claim, bool):
        if delete:
            _unlink_quietly(folder / f"{PREFIX}{key}.lock")
        os.close(claim)


def release(recovered: Recovered) -> None:
    """Give up the claim on a left-behind file without deleting it (another launch may offer it)."""
    key = recovered.file.name[len(PREFIX) : -len(SUFFIX)]
    _unclaim(recovered.file.parent, key, recovered.lock_fd, delete=False)
    recovered.lock_fd = None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
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


__all__ = ["Recovered", "RecoveryDamaged", "RecoveryStore", "read_recovery", "recovery_dir", "recovery_dirs", "release"]
