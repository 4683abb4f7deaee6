"""After a crash: the texts that gradviz windows which are gone left behind, offered one by one
(restore into the editor, save to a file, or discard). Only a text the user discards is deleted;
closing the list in any other way keeps them all for the next offer.

The source controller owns the editor's text; this module only asks it to adopt a text
(``adopt``), so it is built from the few things it uses, not from the controller."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from gradviz.app.recovery import Recovered, RecoveryDamaged, RecoveryStore, release
from gradviz.app.recovery_dialog import RecoveryDialog
from gradviz.schema.atomic_write import atomic_writer, os_reason
from gradviz.schema.source_files import MAX_SOURCE_BYTES
from gradviz.schema.units import format_bytes

PYTHON_FILTER = "Python files (*.py)"
STATUS_MS = 15_000


class RecoveryOffer:
    def __init__(
        self,
        window: QMainWindow,
        store: RecoveryStore,
        *,
        keep_changes: Callable[[], bool],
        adopt: Callable[[str, Path | None], bool],
        notify: Callable[[str], None],
    ) -> None:
        """``keep_changes()``: ask about the editor's unsaved text first (False: cancelled);
        ``adopt(text, suggested path)``: make ``text`` the editor's unsaved text, True once this
        window's own recovery copy holds it; ``notify``: tell the user once."""
        self.window, self.store = window, store
        self._keep_changes, self._adopt, self._notify = keep_changes, adopt, notify
        self.dialog: RecoveryDialog | None = None  # while it is open

    def offer(self, *, asked: bool = False) -> bool:
        """List every text that windows which are gone left behind; True when one was restored
        into the editor. ``asked``: the user chose the menu item (say so when there is none)."""
        orphans, problems = self.store.orphans()
        for problem in problems:
            self._notify(problem)
        if not orphans:
            if asked:
                self._say("No unsaved work of other gradviz windows to recover.")
            return False
        dialog = RecoveryDialog(
            orphans, restore=self.restore, save_copy=self.save_copy, discard=RecoveryStore.discard,
            restorable=restorable, parent=self.window,
        )  # fmt: skip
        self.dialog = dialog
        try:
            dialog.exec()
        finally:
            self.dialog = None
            for entry in dialog.remaining:  # kept for later: nothing deleted, nothing held
                release(entry)
            dialog.deleteLater()
        left = len(dialog.remaining)
        if left:
            self._say(
                f"{left:,} unsaved {'text is' if left == 1 else 'texts are'} kept: File → Recover Unsaved Work… "
                "lists them again."
            )
        return dialog.restored is not None

    def restore(self, entry: Recovered) -> bool:
        """Put a left-behind text into the editor as this window's unsaved text; its file is
        deleted only once this window's own recovery copy holds the text."""
        if not self._keep_changes():
            return False
        if not RecoveryStore.claim(entry):
            QMessageBox.warning(self.window, "Restore", f"Another gradviz window has taken {entry.title} meanwhile.")
            return False
        try:
            text = entry.text
        except RecoveryDamaged as exc:
            release(entry)
            QMessageBox.warning(self.window, "Restore", f"Cannot restore {entry.title}: {exc}. It is left in {entry.file}.")
            return False
        # the file it came from is only a suggestion for Save: it is neither read nor written unasked
        suggested = Path(entry.path) if entry.path and os.path.isabs(entry.path) else None
        if self._adopt(text, suggested):
            RecoveryStore.discard(entry)
        else:
            release(entry)  # our own copy could not be written: theirs stays for the next launch
        return True

    def save_copy(self, entry: Recovered) -> bool:
        """Write a left-behind text to a file the user picks (copied from the recovery file a
        chunk at a time: a text too big for the editor is saved without ever being in memory)."""
        start = entry.path if entry.path and os.path.isabs(entry.path) else str(Path.home() / entry.title)
        chosen, _ = QFileDialog.getSaveFileName(self.window, f"Save {entry.title}", start, PYTHON_FILTER)
        if not chosen:
            return False
        if not RecoveryStore.claim(entry):
            QMessageBox.warning(self.window, "Save", f"Another gradviz window has taken {entry.title} meanwhile.")
            return False
        try:
            with atomic_writer(chosen) as out:
                entry.copy_to(out)
        except (OSError, RecoveryDamaged) as exc:
            release(entry)
            why = os_reason(exc) if isinstance(exc, OSError) else str(exc)
            QMessageBox.warning(self.window, "Cannot save", f"Cannot save {chosen}: {why}. The unsaved text is kept.")
            return False
        RecoveryStore.discard(entry)
        self._say(f"Unsaved text of {entry.title} saved to {chosen}")
        return True

    def _say(self, text: str) -> None:
        self.window.statusBar().showMessage(text, STATUS_MS)


def restorable(entry: Recovered) -> str | None:
    """Why ``entry`` cannot go into the editor (None: it can)."""
    if entry.size > MAX_SOURCE_BYTES:
        return f"It is {format_bytes(entry.size)}, more than the {format_bytes(MAX_SOURCE_BYTES)} the editor opens."
    return None
