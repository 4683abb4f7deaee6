"""The main window: picker and editor on the left, the run bar on top, the Jacobians side by
side in the centre with the autograd graph below them, the memory study on the right.

It builds the panels and their state objects and wires them to the run controller, which owns the
worker's queue; panels are docks, and the layout, the last file and the run settings persist.
"""

from __future__ import annotations

import base64
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from gradviz.app import window_layout
from gradviz.app.failures import describe_failure
from gradviz.app.panels.editor_panel import EditorPanel
from gradviz.app.panels.graph_panel import GraphPanel
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.panels.memory_panel import MemoryPanel
from gradviz.app.panels.output_panel import OutputPanel
from gradviz.app.panels.picker_panel import PickerPanel
from gradviz.app.panels.run_bar import RunBar
from gradviz.app.panels.verdict_banner import VerdictBanner
from gradviz.app.preferences import Preferences, settings_store
from gradviz.app.recovery import RecoveryStore
from gradviz.app.result_loader import ResultLoader
from gradviz.app.run_controller import CheckRequest, RunController
from gradviz.app.source_controller import SourceController
from gradviz.app.state import CurrentResult, MemorySettings, RunSettings, SourceDocument
from gradviz.app.worker_client import WorkerClient
from gradviz.schema.results import CheckResult
from gradviz.schema.session import SUFFIX, Session, SessionError, save_session

DEFAULT_EXAMPLE = "linear"
SESSION_FILTER = f"gradviz sessions (*{SUFFIX})"


class MainWindow(QMainWindow):
    result_shown = Signal()  # a result has been drawn (tests and --screenshot wait on it)
    memory_shown = Signal()  # the memory study has been drawn
    run_failed = Signal(str)  # the message shown for a failed run

    def __init__(self, settings: QSettings | None = None, *, auto_run: bool = True) -> None:
        super().__init__()
        self.settings_store, settings_problems = (settings, []) if settings is not None else settings_store()
        self.preferences = Preferences(self.settings_store)
        self.preferences.dropped.extend(settings_problems)
        self.setWindowTitle("gradviz")
        self.resize(*window_layout.default_size())
        self.run_settings = RunSettings(parent=self)
        self.memory_options = MemorySettings(parent=self)
        self.document = SourceDocument()
        self.current = CurrentResult(self)
        self._summary: dict = {}  # the worker's answer to the check being loaded
        self.recovery = RecoveryStore()
        self.worker = WorkerClient(self)
        self.worker.ready.connect(self._on_worker_ready)  # devices first; then the controller sends what waits
        self.worker.start()  # before the panels are built: torch imports while the window is made
        self.controller = RunController(self.worker, self)
        self.loader = ResultLoader(self)
        self.picker = PickerPanel()
        self.editor = EditorPanel()
        self.run_bar = RunBar(self.run_settings)
        self.banner = VerdictBanner()
        self.jacobians = JacobianPanel()
        self.graph = GraphPanel()
        self.memory = MemoryPanel(self.memory_options)
        self.output = OutputPanel()
        self.source = SourceController(
            self, self.editor, self.picker, self.document, self.preferences, self.recovery,
            run_settings=self.run_settings, memory_options=self.memory_options,
        )  # fmt: skip
        self.docks = window_layout.arrange(self, {
            "run_bar": self.run_bar, "banner": self.banner, "jacobians": self.jacobians, "picker": self.picker,
            "editor": self.editor, "output": self.output, "graph": self.graph, "memory": self.memory,
        })
        self._build_actions()
        self._connect()
        self._restore()
        # layout and settings are saved a moment after each change, not only at a clean exit
        self.layout_saver = window_layout.LayoutSaver(self, self.docks.values(), self._save_settings)
        self.layout_saver.watch(self.run_settings, self.memory_options, self.document)
        if auto_run:  # only a built-in example runs by itself (see run_at_launch)
            self.source.when_idle(self.run_at_launch)

    def _build_actions(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        view_menu = self.menuBar().addMenu("&View")
        run_menu = self.menuBar().addMenu("&Run")
        self.actions: dict[str, QAction] = {}
        for name, text, shortcut, slot, menu in (
            ("new", "&New Function…", QKeySequence.StandardKey.New, self.source.new_function, file_menu),
            ("open", "&Open…", QKeySequence.StandardKey.Open, self.source.open_dialog, file_menu),
            ("save", "&Save", QKeySequence.StandardKey.Save, self.source.save, file_menu),
            ("save_as", "Save &As…", QKeySequence.StandardKey.SaveAs, self.source.save_as, file_menu),
            ("open_session", "Open Sess&ion…", "Ctrl+Shift+O", self.open_session_dialog, file_menu),
            ("save_session", "Save Sessio&n…", "Ctrl+Alt+S", self.save_session_dialog, file_menu),
            ("export", "&Export figures…", "Ctrl+E", self.export_dialog, file_menu),
            ("quit", "&Quit", QKeySequence.StandardKey.Quit, self.close, file_menu),
            ("run", "&Run", "Ctrl+Return", self.request_run, run_menu),
            ("cancel", "&Cancel", "Esc", self.cancel_run, run_menu),
            ("bigger", "&Larger text", QKeySequence.StandardKey.ZoomIn, lambda: self._zoom(1), view_menu),
            ("smaller", "&Smaller text", QKeySequence.StandardKey.ZoomOut, lambda: self._zoom(-1), view_menu),
        ):
            action = QAction(text, self)
            action.setShortcut(QKeySequence(shortcut))
            action.triggered.connect(slot)
            menu.addAction(action)
            self.addAction(action)
            self.actions[name] = action
        self.actions["run"].setShortcuts([QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter")])
        run_menu.addAction(self.source.run_known_action)
        edit_menu = self.menuBar().addMenu("&Edit")
        undo = QAction(
            "&Undo", self, shortcut=QKeySequence.StandardKey.Undo, triggered=self.editor.editor.undo
        )
        redo = QAction(
            "&Redo", self, shortcut=QKeySequence.StandardKey.Redo, triggered=self.editor.editor.redo
        )
        edit_menu.addActions([undo, redo])
        view_menu.addSeparator()
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())

    def _connect(self) -> None:
        self.source.title_changed.connect(self.setWindowTitle)
        self.run_bar.run_requested.connect(self.request_run)
        self.run_bar.cancel_requested.connect(self.cancel_run)
        self.worker.output.connect(self.output.append)
        controller = self.controller
        controller.check_queued.connect(self._on_check_queued)
        controller.check_started.connect(self._on_check_started)
        controller.progress.connect(self.run_bar.set_progress)
        controller.check_finished.connect(self._on_check_finished)
        controller.check_failed.connect(self._on_check_failed)
        controller.worker_died.connect(self._on_worker_died)
        controller.memory_finished.connect(self._on_memory_finished)
        controller.memory_failed.connect(self.memory.set_error)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(lambda request, message: self._on_check_failed(request, {"kind": "io", "message": message}))
        self.current.changed.connect(self._on_result_changed)
        self.jacobians.block_changed.connect(self._on_block_changed)
        self.memory.measure_requested.connect(self.request_memory)

    # --- persistence -----------------------------------------------------------------------
    def _restore(self) -> None:
        """Layout, settings and the last source as the last launch left them; every value is
        checked, and a bad one is dropped, named in the status bar and removed from the file."""
        prefs = self.preferences
        prefs.restore_layout(self)
        prefs.restore_values("run", self.run_settings)
        self.run_settings.device = "cpu"  # CUDA is chosen again once the worker has seen it
        prefs.restore_values("memory", self.memory_options)
        self.picker.set_recent(prefs.recent())
        self.source.restore_last(prefs.last_source(), DEFAULT_EXAMPLE)
        if prefs.dropped:
            self.source.notify("Dropped from the saved settings: " + "; ".join(prefs.dropped) + ".")

    def _save_settings(self) -> None:
        prefs = self.preferences
        prefs.save_layout(self)
        prefs.save_values("run", self.run_settings.to_dict())
        prefs.save_values("memory", self.memory_options.to_dict())
        prefs.save_last_source(self.document.builtin_name, self.source.last_source_path())
        prefs.sync()

    # --- documents (SourceController keeps the editor's text, its file and its recovery copy) ---
    def load_builtin(self, name: str) -> None:
        self.source.load_builtin(name)

    def open_file(self, path: Path) -> None:
        """Open a file as text, read off the GUI thread (``source.loaded`` / ``source.refused``
        say how it went); nothing runs until the user presses Run."""
        self.source.open_file(path)

    def run_at_launch(self) -> bool:
        """Run what the window shows if it may run by itself (a built-in example; a file the
        user ran before when they allowed it); anything else waits for Run."""
        if not self.source.may_run_at_launch():
            return False
        self.request_run()
        return True

    def offer_recovery(self) -> bool:
        """After a crash: offer the newest unsaved text a dead gradviz left behind."""
        return self.source.offer_recovery()

    @property
    def modified(self) -> bool:
        return self.source.modified

    def export_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export figures to folder", str(Path.home()))
        if folder:
            self.export_figures(Path(folder))

    def export_figures(self, folder: Path) -> list[Path]:
        """Write each panel as a PNG (for slides): jacobians, graph and memory."""
        stem = Path(self.document.filename).stem or "gradviz"
        written = []
        for name, panel in (("jacobians", self.jacobians), ("graph", self.graph), ("memory", self.memory)):
            path = folder / f"{stem}_{name}.png"
            try:
                panel.export_png(str(path))
            except OSError as exc:
                QMessageBox.warning(self, "Cannot export", str(exc))
                break
            written.append(path)
        if written:
            self.statusBar().showMessage(f"Exported {len(written)} figures to {folder}", 8000)
        return written

    # --- running ---------------------------------------------------------------------------
    def request_run(self) -> None:
        """Run the editor's code (or the target) now if the worker is free, else as soon as it is."""
        target, inputs_path = self.document.target or (None, None)
        self.source.note_run()
        self.controller.run_check(
            CheckRequest(
                source=self.editor.text(),
                filename=self.document.filename,
                function=self.document.function,
                settings=self.run_settings.check_settings(),
                timeout=self.run_settings.timeout or None,
                target=target,
                inputs_path=inputs_path,
            )
        )

    def open_target(self, target: str, inputs_path: str | None, settings: dict | None = None) -> None:
        """Check a Function where it lives (``pkg.mod:Name`` or ``file.py:Name``) on saved inputs,
        as ``gradviz.show`` asks: the worker imports it; this process never does. Runs at once."""
        if not self.source.maybe_keep_changes():
            return
        if settings:
            dropped = self.run_settings.update(settings)
            if dropped:
                self.statusBar().showMessage("Ignored settings: " + "; ".join(dropped), 8000)
        inputs = f"\n# on the inputs saved in {inputs_path}" if inputs_path else ""
        self.source.set_source(
            f"# gradviz checks {target}{inputs}\n# (the worker imports it where it lives; open its file to edit it)\n",
            None,
        )
        self.document.target = (target, inputs_path)
        self.source.update_title()
        self.request_run()

    def request_memory(self, options: dict) -> None:
        """Measure the conv-BN study with these options; waits for a running check to finish."""
        self.controller.measure_memory(options)

    def cancel_run(self) -> None:
        self.controller.cancel()
        self.run_bar.set_running(False, "cancelled")

    def _on_worker_ready(self, info: dict) -> None:
        devices = info.get("devices", [])
        self.run_bar.set_devices(devices)
        self.memory.set_devices([d["name"] for d in devices if d.get("available")])

    def _on_check_queued(self, for_worker: bool) -> None:
        self.run_bar.set_running(True)
        if for_worker:
            self.banner.show_message("Starting the worker (importing torch)…", "idle")

    def _on_check_started(self, _request: int) -> None:
        self.editor.clear_error()
        self.output.clear()
        self.run_bar.set_running(True)

    def _on_check_finished(self, request: int, summary: dict) -> None:
        self._summary = summary
        self.run_bar.set_progress_text("loading result…")
        self.loader.load(request, summary)

    def _on_loaded(self, request: int, result: CheckResult, displays: dict) -> None:
        if not self.controller.is_current(request):  # a newer run has started meanwhile
            return
        self.run_bar.set_running(False, "done")
        self.controller.result_shown(request)
        summary = self._summary
        self.current.set(
            result, request=request, graph=summary.get("graph"), graph_error=summary.get("graph_error"), displays=displays
        )
        if self.memory.result() is None and not self.controller.memory_asked:  # populate it once at launch
            self.request_memory(self.memory.options())
        QTimer.singleShot(0, self.result_shown.emit)

    def _on_result_changed(self) -> None:
        result = self.current.result
        if result.functions:
            self.picker.set_functions(result.functions, self.document.function or result.function)
        self.jacobians.set_result(result, self.current.displays)
        self.graph.set_graph(self.current.graph, self.current.graph_error)
        self._on_block_changed()

    def _on_block_changed(self, *_args) -> None:
        if self.current.result is not None:
            self.banner.show_result(self.current.result, self.jacobians.current_block())

    def _on_check_failed(self, request: int, error: dict) -> None:
        if not self.controller.is_current(request):
            return
        failure = describe_failure(error, self.document.filename)
        self.run_bar.set_running(False, failure.progress)
        if failure.mark_editor:
            self.editor.show_error(failure.message, failure.line, failure.traceback)
        self.banner.show_message(failure.headline, failure.state, failure.details)
        if failure.reported is not None:
            self.run_failed.emit(failure.reported)

    def _on_worker_died(self, message: str) -> None:
        self.run_bar.set_running(False, "worker restarted")
        self.banner.show_message("The worker process died", "error", message)
        self.run_failed.emit(message)

    def _on_memory_finished(self, payload: dict) -> None:
        self.memory.set_result(payload)
        QTimer.singleShot(0, self.memory_shown.emit)

    def _zoom(self, step: int) -> None:
        size = self.editor.editor.font().pointSize() + step
        self.editor.set_font_size(max(7, min(32, size)))

    # --- sessions --------------------------------------------------------------------------
    def open_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", str(Path.home()), SESSION_FILTER)
        if path:
            self.open_session(Path(path))

    def save_session_dialog(self) -> None:
        start = Path.home() / f"{Path(self.document.filename).stem or 'untitled'}{SUFFIX}"
        path, _ = QFileDialog.getSaveFileName(self, "Save session", str(start), SESSION_FILTER)
        if path:
            self.save_session(Path(path).with_suffix(SUFFIX))

    def current_session(self) -> Session:
        return Session(
            code=self.editor.text(),
            function=self.document.function,
            path=str(self.document.path) if self.document.path and not self.document.builtin_name else None,
            builtin=self.document.builtin_name,
            run=self.run_settings.to_dict(),
            memory=self.memory_options.to_dict(),
            layout=base64.b64encode(bytes(self.saveState())).decode("ascii"),
        )

    def save_session(self, path: Path) -> bool:
        try:
            save_session(path, self.current_session())
        except SessionError as exc:
            QMessageBox.warning(self, "Cannot save session", exc.message)
            return False
        self.statusBar().showMessage(f"Session saved to {path}", 8000)
        return True

    def open_session(self, path: Path) -> None:
        """Restore code, Function, settings and layout, read and checked off the GUI thread
        before anything changes; nothing runs until the user presses Run."""
        self.source.open_session(path)

    # --- closing ---------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.source.maybe_keep_changes():
            event.ignore()
            return
        self._save_settings()
        self.layout_saver.stop()
        self.source.close()
        self.worker.shutdown()
        event.accept()
