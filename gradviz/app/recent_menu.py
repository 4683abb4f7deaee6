"""File → Open Recent: the files the picker's *Recent files* group lists, newest first.

The list is read from the preferences each time the menu opens, so a file deleted since is not
offered, and a path that vanishes between opening the menu and choosing it gets the window's own
"Cannot open file" message, as any file that cannot be read does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QMenu, QWidget

from gradviz.app.preferences import Preferences, setting_path

NONE_YET = "No recent files"
CLEAR = "Clear recent files"


def entry_text(number: int, path: Path) -> str:
    """'&1  name.py — /its/folder': a mnemonic for the first nine, the folder to tell twins apart."""
    key = f"&{number}  " if number <= 9 else ""
    return f"{key}{path.name.replace('&', '&&')} — {str(path.parent).replace('&', '&&')}"


class RecentMenu(QMenu):
    """The recent files as a menu; choosing one calls ``open_file(path)``, clearing calls
    ``cleared()`` after the preferences forget them."""

    def __init__(
        self,
        preferences: Preferences,
        open_file: Callable[[Path], object],
        cleared: Callable[[], object],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Open &Recent", parent)
        self.preferences, self._open_file, self._cleared = preferences, open_file, cleared
        self.aboutToShow.connect(self.refill)
        self.refill()

    def refill(self) -> None:
        """One entry per recent file that still exists; 'No recent files' (disabled) when none."""
        self.clear()
        paths = [setting_path(kept) for kept in self.preferences.recent()]
        for number, path in enumerate(paths, start=1):
            action = self.addAction(entry_text(number, path))
            action.setToolTip(str(path))
            action.triggered.connect(lambda _checked=False, chosen=path: self._open_file(chosen))
        if not paths:
            self.addAction(NONE_YET).setEnabled(False)
            return
        self.addSeparator()
        self.addAction(CLEAR).triggered.connect(self._clear)

    def _clear(self) -> None:
        self.preferences.forget_recent()
        self._cleared()
        self.refill()
