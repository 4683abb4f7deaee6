"""File → Open Session / Save Session: the editor's code, its Function, the run and memory
settings and the window's layout in one file. Opening reads and checks it off the GUI thread
(``SourceController.open_session``); nothing runs until the user presses Run."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from gradviz.app.exports import Exports, file_stem
from gradviz.app.state import MemorySettings, RunSettings, SourceDocument
from gradviz.schema.session import SUFFIX, Session, SessionError, save_session

SESSION_FILTER = f"gradviz sessions (*{SUFFIX})"


def session_values(
    session: Session, run_settings: RunSettings | None, memory_options: MemorySettings | None
) -> tuple[dict[str, Any], dict[str, Any], QByteArray | None, list[str]]:
    """What of a session applies, every value checked before any changes a state: the run and
    memory settings to set, the layout to restore, and a few words per value dropped.

    Args:
        session: a validated session.
        run_settings, memory_options: the window's states (None: that part is not applied).

    Returns:
        (run values, memory values, layout or None, what was dropped).
    """
    run: dict[str, Any] = {}
    memory: dict[str, Any] = {}
    dropped: list[str] = []
    parts: tuple[tuple[dict, Any, dict], ...] = ((session.run, run_settings, run), (session.memory, memory_options, memory))
    for values, state, kept in parts:
        if state is None:
            continue
        trial = type(state)(state._values)  # a copy to try each value on
        if not trial.update(values):  # all of them together (gradcheck's options depend on one another)
            kept.update(values)
            continue
        trial = type(state)(state._values)
        for name, value in values.items():
            problems = trial.update({name: value})
            dropped.extend(problems)
            if not problems:
                kept[name] = value
    layout = None
    if session.layout:
        try:
            layout = QByteArray(base64.b64decode(session.layout, validate=True))
        except (binascii.Error, ValueError):
            dropped.append("the window layout (not base64)")
    return run, memory, layout, dropped


class SessionFiles:
    def __init__(
        self,
        window: QMainWindow,
        *,
        code: Callable[[], str],
        document: SourceDocument,
        run_settings: RunSettings,
        memory_options: MemorySettings,
        folders: Exports,
        open_session: Callable[[Path], None],
    ) -> None:
        """``code()``: the editor's text; ``folders``: where the file dialogs start (the folder
        used last); ``open_session(path)``: read and apply a session."""
        self.window, self._code, self.document = window, code, document
        self.run_settings, self.memory_options, self.folders = run_settings, memory_options, folders
        self.open = open_session

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open session", self.folders.last_folder(), SESSION_FILTER)
        if path:
            self.folders.remember_folder(Path(path))
            self.open(Path(path))

    def save_dialog(self) -> None:
        start = Path(self.folders.last_folder()) / f"{file_stem(self.document, 'untitled')}{SUFFIX}"
        path, _ = QFileDialog.getSaveFileName(self.window, "Save session", str(start), SESSION_FILTER)
        if path:
            self.folders.remember_folder(Path(path))
            self.save(Path(path).with_suffix(SUFFIX))

    def current(self) -> Session:
        """What a session saved now holds."""
        document = self.document
        return Session(
            code=self._code(),
            function=document.function,
            path=str(document.path) if document.path and not document.builtin_name else None,
            builtin=document.builtin_name,
            run=self.run_settings.to_dict(),
            memory=self.memory_options.to_dict(),
            layout=base64.b64encode(bytes(self.window.saveState())).decode("ascii"),
        )

    def save(self, path: Path) -> bool:
        try:
            save_session(path, self.current())
        except SessionError as exc:
            QMessageBox.warning(self.window, "Cannot save session", exc.message)
            return False
        self.window.statusBar().showMessage(f"Session saved to {path}", 8000)
        return True
