"""What the window remembers between launches, in QSettings: its layout, the run settings, the
last source and the recent files. Values come back as text; the states validate them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow

MAX_RECENT = 8


class Preferences:
    def __init__(self, store: QSettings) -> None:
        self.store = store

    def restore_layout(self, window: QMainWindow) -> None:
        geometry, state = self.store.value("window/geometry"), self.store.value("window/state")
        if isinstance(geometry, QByteArray):
            window.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            window.restoreState(state)

    def save_layout(self, window: QMainWindow) -> None:
        self.store.setValue("window/geometry", window.saveGeometry())
        self.store.setValue("window/state", window.saveState())

    def run_values(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The saved run settings among ``names`` (as QSettings gives them back: mostly text)."""
        return {k: self.store.value(f"run/{k}") for k in names if self.store.contains(f"run/{k}")}

    def save_run_values(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            self.store.setValue(f"run/{key}", value)

    def last_source(self) -> str:
        """``builtin:NAME``, a file path, or ''."""
        last = self.store.value("source/last", "")
        return last if isinstance(last, str) else ""

    def save_last_source(self, builtin: str | None, path: Path | None) -> None:
        if builtin:
            self.store.setValue("source/last", f"builtin:{builtin}")
        elif path:
            self.store.setValue("source/last", str(path))

    def recent(self) -> list[str]:
        """Recent files that still exist, newest first."""
        value = self.store.value("source/recent", [])
        paths = [value] if isinstance(value, str) else list(value or [])
        return [p for p in paths if Path(p).is_file()]

    def remember(self, path: Path) -> list[str]:
        """Put ``path`` first among the recent files; return the new list."""
        paths = [str(path), *(p for p in self.recent() if p != str(path))][:MAX_RECENT]
        self.store.setValue("source/recent", paths)
        return paths

    def sync(self) -> None:
        self.store.sync()
