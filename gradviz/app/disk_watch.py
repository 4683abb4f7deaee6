"""Noticing that the open file changed on disk, so that Run never checks an old text under the
file's name.

``QFileSystemWatcher`` watches the file and its folder: an editor that saves by writing a new
file and renaming it over the old one (most do) replaces the inode, and the watcher drops a
path whose file went away, so the folder's change puts it back. The signals are gathered for a
moment (an editor's save is several events) and then ``changed`` is emitted once; whoever
listens compares the file with its stamp (``file_stamp.change_since``), which is also checked
just before each Run, so a change the watcher missed is still caught.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from gradviz.app.file_loading import LoadRefused, read_source_stamped
from gradviz.schema.file_stamp import FileStamp, change_since

SETTLE_MS = 100  # an editor's save is a burst of events: look once it has settled


class DiskWatch(QObject):
    """Watches one file (or none); ``changed`` after it may have changed on disk."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._watcher = QFileSystemWatcher(self)
        self._path: str | None = None
        self._settle = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._settle.timeout.connect(self._on_settled)
        self._watcher.fileChanged.connect(self._on_event)
        self._watcher.directoryChanged.connect(self._on_event)

    @property
    def path(self) -> str | None:
        return self._path

    def watch(self, path: Path | None) -> None:
        """Watch ``path`` (None: nothing) instead of what was watched."""
        new = os.path.abspath(path) if path is not None else None
        if new == self._path:
            self._rewatch()
            return
        self.stop()
        self._path = new
        self._rewatch()

    def stop(self) -> None:
        self._settle.stop()
        watched = self._watcher.files() + self._watcher.directories()
        if watched:
            self._watcher.removePaths(watched)
        self._path = None

    def _rewatch(self) -> None:
        """Watch the file (again, after a rename replaced it) and its folder."""
        if self._path is None:
            return
        folder = os.path.dirname(self._path)
        if folder not in self._watcher.directories() and os.path.isdir(folder):
            self._watcher.addPath(folder)
        if self._path not in self._watcher.files() and os.path.exists(self._path):
            self._watcher.addPath(self._path)

    def _on_event(self, _path: str) -> None:
        self._settle.start()

    def _on_settled(self) -> None:
        self._rewatch()
        self.changed.emit()


class DiskFollower(QObject):
    """Keeps the editor with the file on disk: a change the editor has no edits against is
    loaded (and said so); with unsaved edits the user is asked, once per change, whether to load
    the file (losing the edits) or keep the edits (Save then asks before overwriting)."""

    def __init__(
        self,
        parent: QWidget,
        *,
        stamps: dict[str, FileStamp],
        current: Callable[[], Path | None],
        modified: Callable[[], bool],
        reload: Callable[[Path, str, FileStamp], None],
        say: Callable[[str], None],
    ) -> None:
        """``stamps``: the files as this window left them, by absolute path; ``current()``: the
        open file, if it came from disk here; ``reload(path, text, stamp)`` shows its new text."""
        super().__init__(parent)
        self._parent, self._stamps, self._current = parent, stamps, current
        self._modified, self._reload, self._say = modified, reload, say
        self._answered: tuple | None = None  # the file's (device, inode, size, mtime) the user was asked about
        self.question: QMessageBox | None = None  # open while the user is asked
        self.watch = DiskWatch(self)
        self.watch.changed.connect(self.follow)

    def follow(self) -> None:
        """Take in a change on disk of the open file, or ask about it (not waiting for the
        answer: the question stays open, and Run meanwhile checks the editor's text)."""
        path = self._current()
        self.watch.watch(path)
        stamp = self._stamps.get(os.path.abspath(path)) if path is not None else None
        if path is None or stamp is None:
            return
        change = change_since(stamp)
        if change is None or change.startswith("it was deleted"):
            return  # a deleted file: the editor keeps the text, and Save asks before writing it again
        if not self._modified():
            self._load(path, change)
            return
        if self.question is not None or _identity(path) == self._answered or QApplication.activeModalWidget():
            return  # asked already, or another question is open (Save's own): asked at the next look
        self._ask(path, change)

    def _load(self, path: Path, change: str) -> None:
        try:
            text, stamp = read_source_stamped(path)
        except LoadRefused as exc:
            self._say(f"{path.name} changed on disk ({change}) and cannot be loaded: {exc.message}")
            return
        self._reload(path, text, stamp)
        self._say(f"{path.name} changed on disk: loaded it again (the editor had no unsaved changes).")

    def _ask(self, path: Path, change: str) -> None:
        self._answered = _identity(path)
        box = QMessageBox(QMessageBox.Icon.Question, "File changed on disk", "", QMessageBox.StandardButton.NoButton,
                          self._parent)  # fmt: skip
        box.setText(
            f"{path} was changed on disk ({change}), and the editor has unsaved changes.\n\n"
            "Load the file from disk (your unsaved changes are lost), or keep your changes?"
        )
        load = box.addButton("Load From Disk", QMessageBox.ButtonRole.DestructiveRole)
        keep = box.addButton("Keep My Changes", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)
        box.setEscapeButton(keep)
        self.question = box

        def answered(_result: int) -> None:
            self.question = None
            box.deleteLater()
            if box.clickedButton() is load:
                self._load(path, change)
            else:
                self._say(f"Kept your changes; {path.name} on disk differs (Save asks before overwriting it).")

        box.finished.connect(answered)
        box.open()


def _identity(path: Path) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


__all__ = ["DiskFollower", "DiskWatch"]
