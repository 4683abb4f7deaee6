"""The code in the editor: where it came from, whether it is saved, and its recovery copy.

Opening, saving or replacing the text asks first when there are unsaved changes; unsaved text
reaches a recovery file shortly after each edit. Nothing here runs the code: only Run does.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from gradviz.app.panels.editor_panel import EditorPanel
from gradviz.app.panels.picker_panel import PickerPanel
from gradviz.app.preferences import Preferences
from gradviz.app.recovery import RecoveryStore
from gradviz.app.state import SourceDocument
from gradviz.schema.library import find_builtin, function_names, resources_dir

AUTOSAVE_DELAY_MS = 1500  # unsaved text reaches the recovery file this long after the last keystroke
PYTHON_FILTER = "Python files (*.py)"


class SourceController(QObject):
    title_changed = Signal(str)  # "<file>[*] — gradviz"

    def __init__(
        self,
        window: QWidget,
        editor: EditorPanel,
        picker: PickerPanel,
        document: SourceDocument,
        preferences: Preferences,
        recovery: RecoveryStore,
    ) -> None:
        super().__init__(window)
        self._window, self.editor, self.picker, self.document = window, editor, picker, document
        self.preferences, self.recovery = preferences, recovery
        self._clean_text = ""
        self._autosave = QTimer(self, singleShot=True, interval=AUTOSAVE_DELAY_MS)
        self._autosave.timeout.connect(self.autosave)
        picker.builtin_chosen.connect(self.load_builtin)
        picker.file_chosen.connect(lambda path: self.open_file(Path(path)))
        picker.new_requested.connect(self.new_function)
        picker.open_requested.connect(self.open_dialog)
        picker.function_chosen.connect(document.set_function)
        editor.text_edited.connect(self._on_text_edited)
        document.path_changed.connect(self.update_title)

    # --- replacing the text ----------------------------------------------------------------
    def load_builtin(self, name: str) -> None:
        path = find_builtin(name)
        if path is None or not self.maybe_keep_changes():
            return
        self.set_source(path.read_text(encoding="utf-8"), path, builtin=name)
        self.picker.select_builtin(name)

    def open_file(self, path: Path) -> None:
        """Open a file as text; nothing runs until the user presses Run."""
        if not self.maybe_keep_changes():
            return
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
            QMessageBox.warning(self._window, "Cannot open file", f"Cannot open {path}: {why}.")
            return
        self.set_source(text, path)
        self._remember(path)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self._window, "Open Function", str(Path.home()), PYTHON_FILTER)
        if path:
            self.open_file(Path(path))

    def new_function(self) -> None:
        if not self.maybe_keep_changes():
            return
        template = resources_dir() / "templates" / "new_function.py"
        # an untouched template is nothing to lose: only an edit of it asks "Save changes?"
        self.set_source(template.read_text(encoding="utf-8"), None)

    def set_source(
        self, text: str, path: Path | None, *, builtin: str | None = None, function: str | None = None
    ) -> None:
        """Show ``text`` as the saved contents of ``path`` (or of a built-in, or of nothing)."""
        self.editor.set_text(text)
        self._clean_text = text
        self.document.set_path(path, builtin=builtin)
        self.document.set_function(function)
        self.picker.set_functions(function_names(text), function)
        self.update_title()

    # --- saving ----------------------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self.editor.text() != self._clean_text

    def maybe_keep_changes(self) -> bool:
        """Ask before unsaved text is replaced; False means the user cancelled."""
        if not self.modified or not self._window.isVisible():
            return True
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(
            self._window,
            "Unsaved changes",
            f"Save the changes to {self.document.title}?",
            buttons.Save | buttons.Discard | buttons.Cancel,
        )
        if answer == buttons.Save:
            return self.save()
        return answer == buttons.Discard

    def save(self) -> bool:
        if self.document.path is None or self.document.builtin_name:
            return self.save_as()
        return self.save_to(self.document.path)

    def save_as(self) -> bool:
        own_file = self.document.path and not self.document.builtin_name
        start = str(self.document.path.parent if own_file else Path.home())
        path, _ = QFileDialog.getSaveFileName(self._window, "Save Function", start, PYTHON_FILTER)
        return self.save_to(Path(path)) if path else False

    def save_to(self, path: Path) -> bool:
        try:
            path.write_text(self.editor.text(), encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self._window, "Cannot save", f"Cannot save {path}: {exc.strerror or exc}.")
            return False
        self._clean_text = self.editor.text()
        self.document.set_path(path)
        self._remember(path)
        self.update_title()
        return True

    # --- recovery --------------------------------------------------------------------------
    def autosave(self) -> None:
        """Keep unsaved text where the next launch finds it if this process dies."""
        if self.modified:
            path = str(self.document.path) if self.document.path and not self.document.builtin_name else None
            self.recovery.write(self.editor.text(), self.document.title, path)
        else:
            self.recovery.clear()

    def offer_recovery(self) -> bool:
        """After a crash: offer the newest unsaved text a dead gradviz left behind."""
        orphans = self.recovery.orphans()
        if not orphans:
            return False
        newest, *older = orphans
        for stale in older:
            RecoveryStore.discard(stale)
        answer = QMessageBox.question(
            self._window,
            "Restore unsaved work?",
            f"gradviz ended without saving your changes to {newest.title}. Restore them into the editor?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            RecoveryStore.discard(newest)
            return False
        path = Path(newest.path) if newest.path and Path(newest.path).is_file() else None
        self.set_source(path.read_text(encoding="utf-8") if path else "", path)
        self.editor.set_text(newest.text)  # differs from the file: shows as modified
        self._clean_text = self._clean_text if path else ""
        self.picker.set_functions(function_names(newest.text), None)
        self.update_title()
        RecoveryStore.discard(newest)
        self.autosave()  # now it is this process's unsaved text
        return True

    def close(self) -> None:
        """The window closes with the text saved or discarded: no recovery copy stays behind."""
        self._autosave.stop()
        self.recovery.clear()

    # --- internals -------------------------------------------------------------------------
    def _remember(self, path: Path) -> None:
        self.picker.set_recent(self.preferences.remember(path))

    def update_title(self) -> None:
        star = "*" if self.modified else ""
        self.title_changed.emit(f"{self.document.title}{star} — gradviz")

    def _on_text_edited(self) -> None:
        self.update_title()
        self._autosave.start()
        if self.document.builtin_name is None:
            self.picker.set_functions(function_names(self.editor.text()), self.document.function)
