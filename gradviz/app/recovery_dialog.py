"""The list of unsaved texts that windows which are gone left behind, after a crash.

Every recoverable text is listed (a list view over a model: 2000 texts are 2000 rows, not 2000
widgets), newest first, with a preview of the selected one. The user restores one into the
editor, saves any to a file, or discards the ones they decline; only Discard deletes. Closing the
dialog any other way (Keep for later, Esc, the window's close button, the app quitting) keeps
every text for the next launch or File → Recover Unsaved Work….
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QAbstractListModel, QItemSelectionModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListView,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.recovery import Recovered
from gradviz.schema.units import format_bytes

PREVIEW_CHARS = 4096


class RecoveredList(QAbstractListModel):
    """The texts still to decide about, one row each."""

    def __init__(self, entries: list[Recovered], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.entries = list(entries)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.entries)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        entry = self.entries[index.row()]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.saved_at))
        line = f"{entry.title} — {format_bytes(entry.size)}, kept {when}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{line}\nfrom {entry.path}" if entry.path else line
        return line

    def remove(self, entry: Recovered) -> None:
        row = self.entries.index(entry)
        self.beginRemoveRows(QModelIndex(), row, row)
        del self.entries[row]
        self.endRemoveRows()


class RecoveryDialog(QDialog):
    """Restore / Save As… / Discard, per text; Keep for later keeps them all.

    ``restore(entry)`` puts a text into the editor (True: done, the dialog closes);
    ``save_copy(entry)`` writes it to a file the user picks (True: saved, its row goes);
    ``discard(entry)`` deletes it (True: gone); ``restorable(entry)`` says why a text cannot go
    into the editor (too big), or None.
    """

    def __init__(
        self,
        entries: list[Recovered],
        *,
        restore: Callable[[Recovered], bool],
        save_copy: Callable[[Recovered], bool],
        discard: Callable[[Recovered], bool],
        restorable: Callable[[Recovered], str | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Restore unsaved work?")
        self._restore, self._save_copy, self._discard, self._restorable = restore, save_copy, discard, restorable
        self.restored: Recovered | None = None
        self.discarded: list[Recovered] = []
        self.model = RecoveredList(entries, self)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.list = QListView()
        self.list.setModel(self.model)
        self.list.setUniformItemSizes(True)  # thousands of rows lay out at once
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.list.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.list.doubleClicked.connect(lambda _index: self.restore_selected())
        self.preview = QPlainTextEdit(readOnly=True)
        self.preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.note = QLabel()
        self.note.setWordWrap(True)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.list)
        split.addWidget(self.preview)
        buttons = QDialogButtonBox()
        self.restore_button = self._button(buttons, "&Restore into the editor", self.restore_selected)
        self.save_button = self._button(buttons, "&Save As…", self.save_selected)
        self.discard_button = self._button(buttons, "&Discard", self.discard_selected)
        self.discard_all_button = self._button(buttons, "Discard &all…", self.discard_all)
        self.later_button = buttons.addButton("&Keep for later", QDialogButtonBox.ButtonRole.RejectRole)
        self.later_button.clicked.connect(self.reject)
        self.restore_button.setDefault(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(split, 1)
        layout.addWidget(self.note)
        layout.addWidget(buttons)
        self.resize(760, 520)
        self._update_label()
        if entries:
            self.select(0)

    def _button(self, box: QDialogButtonBox, text: str, slot: Callable[[], object]) -> QPushButton:
        button = box.addButton(text, QDialogButtonBox.ButtonRole.ActionRole)
        button.setAutoDefault(False)
        button.clicked.connect(lambda: slot())
        return button

    # --- what is shown -------------------------------------------------------------------------
    def message(self) -> str:
        n = len(self.model.entries)
        texts = "1 text" if n == 1 else f"{n:,} texts"
        return (
            f"gradviz ended without saving your changes to {texts}. Restore one into the editor, save any "
            "to a file, or discard the ones you do not want. Nothing is deleted unless you discard it: "
            "what you keep for later is offered again at the next launch (and under File → Recover "
            "Unsaved Work…)."
        )

    def _update_label(self) -> None:
        self.label.setText(self.message())

    def select(self, row: int) -> None:
        # through the selection model: the view's own setCurrentIndex reads the keyboard's modifiers
        # (a Ctrl still down would toggle the row off again)
        index = self.model.index(row, 0)
        self.list.selectionModel().setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def selected(self) -> list[Recovered]:
        rows = sorted(index.row() for index in self.list.selectionModel().selectedRows())
        return [self.model.entries[row] for row in rows]

    def _on_selection_changed(self, *_args) -> None:
        chosen = self.selected()
        one = chosen[0] if len(chosen) == 1 else None
        self.preview.setPlainText(one.preview(PREVIEW_CHARS) if one else "")
        why = self._restorable(one) if one else None
        self.restore_button.setEnabled(one is not None and why is None)
        self.save_button.setEnabled(one is not None)
        self.discard_button.setEnabled(bool(chosen))
        if one is None:
            self.note.setText(f"{len(chosen):,} selected." if chosen else "")
        elif why:
            self.note.setText(f"{why} Save As… keeps it in a file.")
        else:
            self.note.setText(f"From {one.path}" if one.path else "")

    # --- decisions -----------------------------------------------------------------------------
    def restore_selected(self) -> bool:
        chosen = self.selected()
        if len(chosen) != 1 or self._restorable(chosen[0]) is not None:
            return False
        if not self._restore(chosen[0]):
            return False
        self.restored = chosen[0]
        self.model.remove(chosen[0])
        self.accept()
        return True

    def save_selected(self) -> bool:
        chosen = self.selected()
        if len(chosen) != 1 or not self._save_copy(chosen[0]):
            return False
        self._gone(chosen)
        return True

    def discard_selected(self) -> int:
        """Delete the selected texts (asking first when there are several)."""
        chosen = self.selected()
        if len(chosen) > 1 and not self._confirm(f"Delete these {len(chosen):,} unsaved texts for good?"):
            return 0
        return self._delete(chosen)

    def discard_all(self, *, confirm: bool = True) -> int:
        entries = list(self.model.entries)
        if confirm and not self._confirm(f"Delete all {len(entries):,} unsaved texts for good?"):
            return 0
        return self._delete(entries)

    def _confirm(self, question: str) -> bool:
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(self, "Discard unsaved texts", question, buttons.Yes | buttons.Cancel, buttons.Cancel)
        return answer == buttons.Yes

    def _delete(self, entries: list[Recovered]) -> int:
        deleted = [entry for entry in entries if self._discard(entry)]
        self.discarded.extend(deleted)
        self._gone(entries)  # one another window holds now is no longer ours to offer
        return len(deleted)

    def _gone(self, entries: list[Recovered]) -> None:
        first = min((self.model.entries.index(e) for e in entries), default=0)
        for entry in entries:
            self.model.remove(entry)
        if not self.model.entries:
            self.accept()
            return
        self._update_label()
        self.select(min(first, len(self.model.entries) - 1))

    @property
    def remaining(self) -> list[Recovered]:
        return list(self.model.entries)


__all__ = ["RecoveredList", "RecoveryDialog"]
