"""Crash recovery: unsaved editor text is written to a per-process recovery file a moment
after each change, and removed on a clean exit. A file left by a process that is gone means
gradviz (or the machine) died with unsaved work, and the next launch offers it back.

Plain JSON in the user's state directory (platformdirs), written atomically.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

RECOVERY_ENV = "GRADVIZ_RECOVERY_DIR"  # tests point this at a temp dir


def recovery_dir() -> Path:
    override = os.environ.get(RECOVERY_ENV)
    return Path(override) if override else Path(platformdirs.user_state_dir("gradviz")) / "recovery"


@dataclass
class Recovered:
    text: str
    title: str  # what the text was called: a file name, a built-in, untitled.py
    path: str | None  # its file, if it had one
    saved_at: float
    file: Path  # the recovery file itself


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RecoveryStore:
    """This process's recovery file, and the ones dead processes left behind."""

    def __init__(self, directory: Path | None = None, pid: int | None = None) -> None:
        self.directory = directory or recovery_dir()
        self.pid = pid or os.getpid()
        self.file = self.directory / f"recovery-{self.pid}.json"

    def write(self, text: str, title: str, path: str | None) -> None:
        """Keep ``text``; quietly does nothing if the disk refuses (autosave must never nag)."""
        data = {"pid": self.pid, "text": text, "title": title, "path": path, "saved_at": time.time()}
        tmp = self.file.with_suffix(".tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(self.file)
        except OSError:
            pass

    def clear(self) -> None:
        self.file.unlink(missing_ok=True)

    def orphans(self) -> list[Recovered]:
        """Recovery files of processes that are gone, newest first; unreadable ones are dropped."""
        found = []
        for file in self.directory.glob("recovery-*.json"):
            try:
                pid = int(file.stem.removeprefix("recovery-"))
            except ValueError:
                continue
            if pid == self.pid or _alive(pid):
                continue
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
                found.append(
                    Recovered(str(data["text"]), str(data["title"]), data.get("path"), float(data["saved_at"]), file)
                )
            except (OSError, ValueError, KeyError, TypeError):
                file.unlink(missing_ok=True)
        return sorted(found, key=lambda r: r.saved_at, reverse=True)

    @staticmethod
    def discard(recovered: Recovered) -> None:
        recovered.file.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"RecoveryStore({self.file})"


__all__ = ["Recovered", "RecoveryStore", "recovery_dir"]
