"""The code in the editor: where it came from, whether it is saved, its recovery copy, and
whether it may run by itself.

Opening, saving or replacing the text asks first when there are unsaved changes; unsaved text
reaches a recovery file shortly after each edit. Files and sessions are read off the GUI thread,
refused at once when they are not files to read (``file_loading``). Each document starts a fresh
undo history. Nothing here runs the code: only Run does, and at launch only a built-in example
(or, when the user allows it, a file they ran before, unchanged) may run by itself.

A path that did not come from this window's own Open or Save (a session's, a recovery file's)
is a suggestion: the first Save asks where, prefilled with it, instead of writing there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from gradviz.app.background import SerialWorker
from gradviz.app.disk_watch import DiskFollower
from gradviz.app.file_loading import FileLoader, read_session, read_source_stamped, write_keeping_owner
from gradviz.app.file_text import file_text, from_editor
from gradviz.app.function_list import FunctionListUpdater
from gradviz.app.panels.editor_panel import EditorPanel
from gradviz.app.panels.picker_panel import PickerPanel
from gradviz.app.preferences import Preferences, setting_path
from gradviz.app.recovery import RecoveryStore, TextTooLarge
from gradviz.app.recovery_offer import PYTHON_FILTER, STATUS_MS, RecoveryOffer
from gradviz.app.session_files import session_values
from gradviz.app.state import MemorySettings, RunSettings, SourceDocument
from gradviz.schema.atomic_write import os_reason
from gradviz.schema.file_stamp import FileStamp, change_since, stamp_of
from gradviz.schema.library import find_builtin, function_names, resources_dir
from gradviz.schema.session import Session
from gradviz.schema.units import format_bytes

AUTOSAVE_DELAY_MS = 50  # a small text reaches the recovery file this long after an edit (and its write)
AUTOSAVE_CHARS_PER_MS = 5_000  # a big one waits longer: 1 ms per 5,000 characters (51 MB: 10 s)
AUTOSAVE_MAX_DELAY_MS = 10_000
LINK_NOTE = "\n\nOverwrite replaces the link itself with the file; what it points to is not written."


def autosave_delay_ms(characters: int) -> int:
    """How long after an edit the recovery copy is written: at once for a text of ordinary size;
    for a huge one (copying it out of the editor blocks the window for a moment) later, so that
    typing in it is not spent writing it again and again."""
    return max(AUTOSAVE_DELAY_MS, min(AUTOSAVE_MAX_DELAY_MS, characters // AUTOSAVE_CHARS_PER_MS))


class SourceController(QObject):
    title_changed = Signal(str)  # "<file>[*] — gradviz"
    loaded = Signal(str)  # a file or session was read and is shown now (its path)
    refused = Signal(str)  # a file or session could not be shown (the message shown)
    notice = Signal(str)  # something the user was told (a dropped setting, autosave trouble)

    def __init__(
        self,
        window: QMainWindow,
        editor: EditorPanel,
        picker: PickerPanel,
        document: SourceDocument,
        preferences: Preferences,
        recovery: RecoveryStore,
        *,
        run_settings: RunSettings | None = None,
        memory_options: MemorySettings | None = None,
    ) -> None:
        super().__init__(window)
        self._window, self.editor, self.picker, self.document = window, editor, picker, document
        self.preferences, self.recovery = preferences, recovery
        self.run_settings, self.memory_options = run_settings, memory_options
        self.loader = FileLoader(self)
        self.functions = FunctionListUpdater(editor.text, self)
        self.functions.found.connect(lambda names: self.picker.set_functions(names, self.document.function))
        self._stamps: dict[str, FileStamp] = {}  # files this window read or wrote, as it left them
        self.disk = DiskFollower(
            window, stamps=self._stamps, current=self.last_source_path, modified=lambda: self.modified,
            reload=self._reload, say=self.say,
        )  # fmt: skip
        self.notices: list[str] = []  # everything the user was told, in order
        self._told: set[str] = set()
        self._writer = SerialWorker("gradviz-autosave")  # the recovery file is written off the GUI thread
        self._wanted: tuple | None = None  # (generation, text, title, path): what the recovery file should hold
        self._generation = self._written = 0
        self._closed = False
        self._autosave = QTimer(self, singleShot=True, interval=AUTOSAVE_DELAY_MS)
        self._autosave.timeout.connect(self.autosave)
        editor.editor.installEventFilter(self)  # focus out: the recovery copy is written at once
        self.recover_action = QAction("Recover Unsaved &Work…", self)
        self.recover_action.setToolTip("The unsaved texts of gradviz windows that ended without saving")
        self.recover_action.triggered.connect(self.offer_recovery)
        self.recovery_offer = RecoveryOffer(
            window, recovery, keep_changes=self.maybe_keep_changes, adopt=self._adopt, notify=self.notify
        )
        self.run_known_action = QAction("Run the last file at launch if I ran it before", self, checkable=True)
        self.run_known_action.setToolTip(
            "Off: at launch only a built-in example runs by itself; a file waits for Run. On: a file you "
            "ran before, unchanged since, runs at launch too."
        )
        self.run_known_action.setChecked(preferences.run_known_files_at_launch())
        self.run_known_action.toggled.connect(preferences.set_run_known_files_at_launch)
        picker.builtin_chosen.connect(self.load_builtin)
        picker.file_chosen.connect(lambda kept: self.open_file(setting_path(kept)))
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
        self.set_source(path.read_text(encoding="utf-8"), path, builtin=path.stem)
        self.picker.select_builtin(path.stem)

    def open_file(self, path: Path) -> None:
        """Open a file as text, read off the GUI thread; nothing runs until the user presses Run.
        ``loaded`` or ``refused`` says how it went."""
        path = Path(path)
        self.loader.load(
            read_source_stamped, path, lambda read: self._show_file(path, *read), self._refuse("Cannot open file")
        )

    def _show_file(self, path: Path, text: str, stamp: FileStamp) -> None:
        if not self.maybe_keep_changes():
            return
        self.set_source(text, path)
        self._stamps[stamp.path] = stamp
        self.disk.watch.watch(path)
        self._remember(path)
        self.loaded.emit(str(path))

    def _reload(self, path: Path, text: str, stamp: FileStamp) -> None:
        """The file changed on disk and is shown again, the cursor on the line it was on."""
        cursor = self.editor.editor.textCursor()
        line, column = cursor.blockNumber(), cursor.positionInBlock()
        self.set_source(text, path, function=self.document.function)
        self._stamps[stamp.path] = stamp
        self.disk.watch.watch(path)
        block = self._document().findBlockByNumber(min(line, self._document().blockCount() - 1))
        cursor.setPosition(block.position() + min(column, block.length() - 1))
        self.editor.editor.setTextCursor(cursor)

    def code_for_run(self) -> str:
        """The text Run checks: the editor's, after taking in a change of its file on disk that
        the editor has no edits against (a stat, and a hash only when the stat moved)."""
        self.disk.follow()
        return self.editor.text()

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
        self.update_title()

    def set_source(
        self, text: str, path: Path | None, *, builtin: str | None = None, function: str | None = None
    ) -> None:
        """Show ``text`` as a new document (fresh undo history), the saved contents of ``path``
        (or of a built-in, or of nothing). Whatever was still being read is dropped."""
        self.loader.cancel()
        self.disk.watch.stop()  # a file from disk is watched again once its stamp is taken
        self.editor.set_text(text)
        self.document.set_path(path, builtin=builtin)
        self.document.set_function(function)
        if builtin:
            self.functions.stop()
            self.picker.set_functions(function_names(text), function)  # the library's own, small file
        else:
            self.picker.set_functions([], function)
            self.functions.scan_now()
        self.update_title()

    # --- sessions --------------------------------------------------------------------------
    def open_session(self, path: Path) -> None:
        """Restore code, Function, settings and layout from a session read off the GUI thread;
        nothing runs until Run. A session that is refused changes nothing."""
        path = Path(path)
        self.loader.load(
            read_session, path, lambda session: self.apply_session(path, session), self._refuse("Cannot open session")
        )

    def apply_session(self, path: Path, session: Session) -> bool:
        """Apply a validated session all at once: every value is checked before the first one
        changes anything; a bad setting is dropped and named, the rest applies."""
        if not self.maybe_keep_changes():
            return False
        run, memory, layout, dropped = session_values(session, self.run_settings, self.memory_options)
        builtin_path = find_builtin(session.builtin) if session.builtin else None
        suggested = Path(session.path) if session.path and os.path.isabs(session.path) else None
        if builtin_path is not None:
            self.set_source(session.code, builtin_path, builtin=builtin_path.stem, function=session.function)
        else:
            self.set_source(session.code, suggested, function=session.function)
        if self.run_settings is not None:
            self.run_settings.update(run)
        if self.memory_options is not None:
            self.memory_options.update(memory)
        if layout is not None and not self._window.restoreState(layout):
            dropped.append("the window layout (Qt cannot restore it)")
        ignored = f" (ignored: {' '.join(dropped)})" if dropped else ""
        self._window.statusBar().showMessage(
            f"Session {path.name} opened: press Run (Ctrl+Enter) to run it{ignored}", STATUS_MS
        )
        self.loaded.emit(str(path))
        return True

    # --- saving ----------------------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self._document().isModified()

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
        """Write the text to its file, when this window opened or saved that file and it is as
        this window left it; ask first when another program changed, deleted or replaced it by a
        link since. Otherwise (a built-in, new text, a path a session or a recovery file
        suggested) ask where."""
        path = self.document.path
        if path is None or self.document.builtin_name:
            return self.save_as()
        stamp = self._stamps.get(os.path.abspath(path))
        if stamp is None:
            return self.save_as(suggested=path)
        change = change_since(stamp)
        if change is None:
            return self.save_to(path, target=stamp.write_to)  # a link it was opened as is kept
        answer = self._ask_about_change(path, change)
        if answer == "save_as":
            return self.save_as()
        return answer == "overwrite" and self.save_to(path)  # the path itself: a new link is replaced, not followed

    def _ask_about_change(self, path: Path, change: str) -> str | None:
        """The file changed on disk: "overwrite", "save_as" or None (cancel)."""
        gone = change.startswith("it was deleted")
        box = QMessageBox(QMessageBox.Icon.Warning, "File changed on disk", "", QMessageBox.StandardButton.NoButton,
                          self._window)  # fmt: skip
        linked = "symbolic link" in change
        box.setText(
            f"{path} was changed since gradviz opened or saved it: {change}.\n\n"
            + ("Save the editor's text there again, " if gone else "Overwrite it with the editor's text, ")
            + "save it to another file, or cancel?"
            + (LINK_NOTE if linked else "")
        )
        overwrite = box.addButton("Save Again" if gone else "Overwrite", QMessageBox.ButtonRole.DestructiveRole)
        save_as = box.addButton("Save As…", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(save_as)
        box.setEscapeButton(cancel)
        box.exec()
        clicked = box.clickedButton()
        return "overwrite" if clicked is overwrite else "save_as" if clicked is save_as else None

    def save_as(self, suggested: Path | None = None) -> bool:
        own_file = self.document.path and not self.document.builtin_name
        start = suggested or (self.document.path if own_file else Path.home() / "untitled.py")
        path, _ = QFileDialog.getSaveFileName(self._window, "Save Function", str(start), PYTHON_FILTER)
        return self.save_to(Path(path)) if path else False

    def save_to(self, path: Path, *, target: Path | None = None) -> bool:
        """Write the text to ``path`` atomically (``target``: where its link points, to write
        through a link the file was opened as). On failure the file on disk is as it was, the
        text stays in the editor, still modified, and the user is told why."""
        target = target or path
        try:
            raw = self.editor.saved_text().encode("utf-8")
            write_keeping_owner(target, raw)
            stamp = stamp_of(path, raw)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(
                self._window,
                "Cannot save",
                f"Cannot save {path}: {os_reason(exc)}.\n\nThe file on disk is unchanged and your text is still "
                "in the editor: free some space or choose another place (File → Save As…).",
            )
            return False
        self._document().setModified(False)
        self.document.set_path(path)
        self._stamps[stamp.path] = stamp
        self.disk.watch.watch(path)
        self._remember(path)
        self.update_title()
        self.autosave()  # saved: no recovery copy
        return True

    def from_disk(self, path: Path) -> bool:
        """Whether this window opened ``path`` from disk or saved to it."""
        return os.path.abspath(path) in self._stamps

    def last_source_path(self) -> Path | None:
        """The file to reopen at the next launch: this document's, if it came from disk here."""
        path = self.document.path
        return path if path and not self.document.builtin_name and self.from_disk(path) else None

    # --- running by itself -----------------------------------------------------------------
    def may_run_at_launch(self) -> bool:
        """At launch only a built-in example, exactly as shipped, runs by itself; a file the user
        ran before, unchanged since, too when they allowed it. Never recovered or session text."""
        document = self.document
        if document.target or self.modified or self.loader.busy:
            return False
        text = self.editor.text()
        if document.builtin_name:
            shipped = find_builtin(document.builtin_name)
            return shipped is not None and shipped.read_text(encoding="utf-8") == text
        path = self.last_source_path()
        if path is None or not self.preferences.run_known_files_at_launch():
            return False
        return self.preferences.ran_before(path.resolve(), text)

    def keep_pending_text(self) -> None:
        """Hand an edit still waiting for its autosave to the writer now: before work that holds
        the GUI thread (drawing a result takes 0.2 s, more under load), which would otherwise hold
        the autosave timer and leave the edit unwritten for as long."""
        if self._autosave.isActive():
            self.autosave()

    def note_run(self) -> None:
        """The user runs the editor's text: remember a saved file's text as one they ran."""
        self.keep_pending_text()  # what runs may crash the machine: keep the text first
        path = self.last_source_path()
        if path is not None and not self.document.target and not self.modified:
            self.preferences.note_run(path.resolve(), self.editor.text())

    def when_idle(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once nothing is being read (now, or when the read answers)."""
        if not self.loader.busy:
            callback()
            return

        def once(busy: bool) -> None:
            if not busy:
                self.loader.busy_changed.disconnect(once)
                callback()

        self.loader.busy_changed.connect(once)

    def restore_last(self, last: str, default: str) -> None:
        """Show what the last session showed: a built-in, or a file (read off the GUI thread;
        the default example shows until it arrives, and stays if the file is gone)."""
        if last.startswith("builtin:") and find_builtin(last[8:]):
            self.load_builtin(last[8:])
            return
        self.load_builtin(default)
        if last and not last.startswith("builtin:") and setting_path(last).is_file():  # a stat: no read, no block
            self.open_file(setting_path(last))

    # --- recovery --------------------------------------------------------------------------
    def autosave(self) -> None:
        """Keep unsaved text where the next launch finds it if this process dies (written off the
        GUI thread; ``flush_autosave`` waits for it). Writes that fall behind are merged: the
        writer always writes the newest text, once."""
        self._autosave.stop()
        self._generation += 1
        if not self.modified:
            self._wanted = (self._generation, None, "", None)
        else:
            path = str(self.document.path) if self.document.path and not self.document.builtin_name else None
            # one copy out of Qt here; turning it into the file's text and its bytes is the writer's
            raw = self._document().toRawText()
            self._wanted = (self._generation, (raw, self.editor.form), self.document.title, path)
        self._writer.submit(self._write_wanted, done=self._on_autosaved, failed=self._on_autosave_failed)

    def _write_wanted(self) -> bool | None:
        """On the writer's thread: bring the recovery file to the newest wanted state."""
        wanted = self._wanted
        if wanted is None or wanted[0] <= self._written:
            return None  # a later call already wrote it
        generation, held, title, path = wanted
        self._written = generation
        if held is None:
            self.recovery.clear()
            return True
        raw, form = held
        return self.recovery.write(file_text(from_editor(raw, form), form), title, path)

    def flush_autosave(self, timeout: float = 10.0) -> bool:
        """Wait until the recovery file is as the last autosave left it."""
        return self._writer.wait(timeout)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusOut and self._autosave.isActive() and not self._closed:
            self.autosave()  # leaving the editor (to Run, to another program): write now
        return False

    def _on_autosaved(self, written: bool | None) -> None:
        """Tell the user, once, when autosave had to move or cannot write at all."""
        if written is None:
            return
        store = self.recovery
        if store.failing:
            reasons = "; ".join(f"{folder}: {why}" for folder, why in store.refusals.items())
            self.notify(
                f"Autosave cannot keep your unsaved text anywhere ({reasons}). Save your work to a file "
                "(File → Save As…); autosave keeps trying.",
                urgent=True,
            )
        elif store.directory != store.preferred:
            why = store.refusals.get(store.preferred, "it refused")
            self.notify(
                f"Autosave cannot write to {store.preferred} ({why}); your unsaved text is kept in "
                f"{store.directory} instead.",
                urgent=True,
            )

    def _on_autosave_failed(self, error: BaseException) -> None:
        if isinstance(error, TextTooLarge):
            self.recovery.clear()  # an older, shorter copy would be offered as if it were the text
            self.notify(
                f"Your unsaved text is {format_bytes(error.size)}, more than autosave keeps: it is not kept if "
                "gradviz ends now. Save it to a file (File → Save As…).",
                urgent=True,
            )
        else:
            self.notify(f"Autosave failed: {error}. Save your work to a file (File → Save As…).", urgent=True)

    def offer_recovery(self) -> bool:
        """After a crash: list every text that windows which are gone left behind; the user
        restores, saves or discards each (``recovery_offer``). True when one was restored."""
        return self.recovery_offer.offer(asked=self.sender() is self.recover_action)

    def _adopt(self, text: str, suggested: Path | None) -> bool:
        """``text`` becomes this window's unsaved text; True once its recovery copy holds it."""
        self.set_source(text, suggested)
        self._document().setModified(True)
        self.update_title()
        self.autosave()  # now it is this window's unsaved text
        return self.flush_autosave() and not self.recovery.failing and self.recovery.file.exists()

    def close(self) -> None:
        """The window closes with the text saved or discarded: no recovery copy stays behind."""
        self._closed = True
        self._autosave.stop()
        self.disk.watch.stop()
        self.functions.stop()
        self.loader.cancel()
        self._generation += 1
        self._wanted = (self._generation, None, "", None)
        self._writer.submit(self._write_wanted)
        self.flush_autosave()

    # --- telling the user ------------------------------------------------------------------
    def notify(self, message: str, *, urgent: bool = False) -> None:
        """Tell the user, once per message: in the status bar, and in a box that stays (without
        blocking) when it is ``urgent``."""
        if message in self._told:
            return
        self._told.add(message)
        self.say(message)
        if urgent:
            box = QMessageBox(QMessageBox.Icon.Warning, "gradviz", message, QMessageBox.StandardButton.Ok, self._window)
            box.setWindowModality(Qt.WindowModality.NonModal)
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.show()

    def say(self, message: str) -> None:
        """Tell the user in the status bar (every time: a file can change on disk twice)."""
        self.notices.append(message)
        self._window.statusBar().showMessage(message, STATUS_MS)
        self.notice.emit(message)

    # --- internals -------------------------------------------------------------------------
    def _document(self):
        return self.editor.editor.document()

    def _refuse(self, title: str) -> Callable[[str], None]:
        def refuse(message: str) -> None:
            QMessageBox.warning(self._window, title, message)
            self.refused.emit(message)

        return refuse

    def _remember(self, path: Path) -> None:
        self.picker.set_recent(self.preferences.remember(path))

    def update_title(self) -> None:
        star = "*" if self.modified else ""
        self.title_changed.emit(f"{self.document.title}{star} — gradviz")

    def _on_text_edited(self) -> None:
        if self._closed:  # the window's teardown edits nothing the user typed: no scans, no writes
            return
        self.update_title()
        if not self._autosave.isActive():  # the first edit of a burst starts it: a long burst still writes
            self._autosave.start(autosave_delay_ms(self._document().characterCount()))
        if self.document.builtin_name is None:
            self.functions.text_changed()
