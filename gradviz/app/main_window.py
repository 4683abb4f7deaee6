"""The main window: picker and editor on the left, the run bar on top, the Jacobians side by
side in the centre, graph and memory below. Panels are docks; their layout, the last file and
the run settings persist in QSettings."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.panels.editor_panel import EditorPanel
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.panels.picker_panel import PickerPanel
from gradviz.app.panels.run_bar import RunBar
from gradviz.app.panels.verdict_banner import VerdictBanner
from gradviz.app.result_loader import ResultLoader
from gradviz.app.results import CheckView
from gradviz.app.state import RunSettings, SourceDocument
from gradviz.app.worker_client import WorkerClient
from gradviz.core.library import find_builtin, function_names, resources_dir

DEFAULT_EXAMPLE = "linear"
MAX_RECENT = 8
USER_CODE_KINDS = {
    "syntax",
    "import",
    "no_function",
    "unknown_function",
    "example_inputs",
    "forward",
    "backward",
    "gradient_count",
    "gradient_shape",
    "bad_output",
}


class MainWindow(QMainWindow):
    result_shown = Signal()  # a result has been drawn (tests and --screenshot wait on it)
    run_failed = Signal(str)  # the message shown for a failed run

    def __init__(self, settings: QSettings | None = None, *, auto_run: bool = True) -> None:
        super().__init__()
        self.settings_store = settings or QSettings("gradviz", "gradviz")
        self.setWindowTitle("gradviz")
        self.resize(1440, 900)
        self.run_settings = RunSettings()
        self.document = SourceDocument()
        self.view: CheckView | None = None
        self._request = 0
        self._pending_run = False
        self._clean_text = ""

        self.worker = WorkerClient(self)
        self.loader = ResultLoader(self)
        self.picker = PickerPanel()
        self.editor = EditorPanel()
        self.run_bar = RunBar(self.run_settings)
        self.banner = VerdictBanner()
        self.jacobians = JacobianPanel()
        self._build_layout()
        self._build_actions()
        self._connect()
        self._restore()
        self.worker.start()
        if auto_run:
            self.request_run()

    # --- layout ----------------------------------------------------------------------------
    def _build_layout(self) -> None:
        toolbar = QToolBar("Run")
        toolbar.setObjectName("run_toolbar")
        toolbar.setMovable(False)
        toolbar.addWidget(self.run_bar)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, toolbar)

        centre = QWidget()
        layout = QVBoxLayout(centre)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.banner)
        layout.addWidget(self.jacobians, 1)
        self.setCentralWidget(centre)

        self.docks: dict[str, QDockWidget] = {}
        self._add_dock("Functions", self.picker, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("Code", self.editor, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.resizeDocks([self.docks["Functions"], self.docks["Code"]], [230, 600], Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["Code"]], [470], Qt.Orientation.Horizontal)

    def _add_dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower()}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.docks[title] = dock
        return dock

    def _build_actions(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        view_menu = self.menuBar().addMenu("&View")
        run_menu = self.menuBar().addMenu("&Run")
        self.actions: dict[str, QAction] = {}
        for name, text, shortcut, slot, menu in (
            ("new", "&New Function…", QKeySequence.StandardKey.New, self.new_function, file_menu),
            ("open", "&Open…", QKeySequence.StandardKey.Open, self.open_dialog, file_menu),
            ("save", "&Save", QKeySequence.StandardKey.Save, self.save, file_menu),
            ("save_as", "Save &As…", QKeySequence.StandardKey.SaveAs, self.save_as, file_menu),
            ("export", "&Export figure…", "Ctrl+E", self.export_dialog, file_menu),
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
        self.picker.builtin_chosen.connect(self.load_builtin)
        self.picker.file_chosen.connect(lambda path: self.open_file(Path(path)))
        self.picker.new_requested.connect(self.new_function)
        self.picker.open_requested.connect(self.open_dialog)
        self.picker.function_chosen.connect(self.document.set_function)
        self.editor.text_edited.connect(self._on_text_edited)
        self.run_bar.run_requested.connect(self.request_run)
        self.run_bar.cancel_requested.connect(self.cancel_run)
        self.worker.ready.connect(self._on_worker_ready)
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        self.worker.crashed.connect(self._on_crashed)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(lambda request, message: self._on_failed(request, {"kind": "io", "message": message}))
        self.jacobians.block_changed.connect(self._on_block_changed)
        self.document.path_changed.connect(self._update_title)

    # --- persistence -----------------------------------------------------------------------
    def _restore(self) -> None:
        store = self.settings_store
        geometry = store.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        state = store.value("window/state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        self.run_settings.update(
            {k: store.value(f"run/{k}") for k in self.run_settings.to_dict() if store.contains(f"run/{k}")}
        )
        if self.run_settings.get("device") != "cpu":
            self.run_settings.set("device", "cpu")  # CUDA is chosen again once the worker has seen it
        self.picker.set_recent(self._recent())
        last = store.value("source/last", "")
        if isinstance(last, str) and last.startswith("builtin:") and find_builtin(last[8:]):
            self.load_builtin(last[8:])
        elif isinstance(last, str) and last and Path(last).is_file():
            self.open_file(Path(last))
        else:
            self.load_builtin(DEFAULT_EXAMPLE)

    def _save_settings(self) -> None:
        store = self.settings_store
        store.setValue("window/geometry", self.saveGeometry())
        store.setValue("window/state", self.saveState())
        for key, value in self.run_settings.to_dict().items():
            store.setValue(f"run/{key}", value)
        if self.document.builtin_name:
            store.setValue("source/last", f"builtin:{self.document.builtin_name}")
        elif self.document.path:
            store.setValue("source/last", str(self.document.path))
        store.sync()

    def _recent(self) -> list[str]:
        value = self.settings_store.value("source/recent", [])
        paths = [value] if isinstance(value, str) else list(value or [])
        return [p for p in paths if Path(p).is_file()]

    def _remember(self, path: Path) -> None:
        paths = [str(path)] + [p for p in self._recent() if p != str(path)]
        self.settings_store.setValue("source/recent", paths[:MAX_RECENT])
        self.picker.set_recent(paths[:MAX_RECENT])

    # --- documents -------------------------------------------------------------------------
    def load_builtin(self, name: str) -> None:
        path = find_builtin(name)
        if path is None or not self.maybe_keep_changes():
            return
        self._set_source(path.read_text(encoding="utf-8"), path, builtin=name)
        self.picker.select_builtin(name)

    def open_file(self, path: Path) -> None:
        """Open a file as text; nothing runs until the user presses Run."""
        if not self.maybe_keep_changes():
            return
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = (
                "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
            )
            QMessageBox.warning(self, "Cannot open file", f"Cannot open {path}: {why}.")
            return
        self._set_source(text, path)
        self._remember(path)

    def new_function(self) -> None:
        if not self.maybe_keep_changes():
            return
        template = resources_dir() / "templates" / "new_function.py"
        self._set_source(template.read_text(encoding="utf-8"), None)
        self._clean_text = ""  # a new file counts as unsaved

    def _set_source(self, text: str, path: Path | None, *, builtin: str | None = None) -> None:
        self.editor.set_text(text)
        self._clean_text = text
        self.document.set_path(path, builtin=builtin)
        names = function_names(text)
        self.document.set_function(None)
        self.picker.set_functions(names, None)
        self._update_title()

    @property
    def modified(self) -> bool:
        return self.editor.text() != self._clean_text

    def maybe_keep_changes(self) -> bool:
        """Ask before unsaved text is replaced; False means the user cancelled."""
        if not self.modified or not self.isVisible():
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to {self.document.title}?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def save(self) -> bool:
        if self.document.path is None or self.document.builtin_name:
            return self.save_as()
        return self.save_to(self.document.path)

    def save_as(self) -> bool:
        start = str(
            self.document.path.parent
            if self.document.path and not self.document.builtin_name
            else Path.home()
        )
        path, _ = QFileDialog.getSaveFileName(self, "Save Function", start, "Python files (*.py)")
        return self.save_to(Path(path)) if path else False

    def save_to(self, path: Path) -> bool:
        try:
            path.write_text(self.editor.text(), encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self, "Cannot save", f"Cannot save {path}: {exc.strerror or exc}.")
            return False
        self._clean_text = self.editor.text()
        self.document.set_path(path)
        self._remember(path)
        self._update_title()
        return True

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open Function", str(Path.home()), "Python files (*.py)")
        if path:
            self.open_file(Path(path))

    def export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export figure", str(Path.home() / "jacobians.png"), "PNG (*.png)"
        )
        if path:
            self.jacobians.export_png(path)

    def _update_title(self) -> None:
        star = "*" if self.modified else ""
        self.setWindowTitle(f"{self.document.title}{star} — gradviz")

    def _on_text_edited(self) -> None:
        self._update_title()
        if self.document.builtin_name is None:
            self.picker.set_functions(function_names(self.editor.text()), self.document.function)

    # --- running ---------------------------------------------------------------------------
    def request_run(self) -> None:
        """Run now if the worker is up, else as soon as it is."""
        if self.worker.busy:
            return
        if not self.worker.is_ready:
            self._pending_run = True
            self.run_bar.set_running(True)
            self.banner.show_message("Starting the worker (importing torch)…", "idle")
            return
        self.editor.clear_error()
        self.run_bar.set_running(True)
        self._request = self.worker.submit(
            "check",
            source=self.editor.text(),
            filename=self.document.filename,
            function=self.document.function,
            settings=self.run_settings.to_dict(),
        )

    def cancel_run(self) -> None:
        self._pending_run = False
        if self.worker.busy:
            self.worker.cancel()
        self.run_bar.set_running(False, "cancelled")

    def _on_worker_ready(self, info: dict) -> None:
        self.run_bar.set_devices(info.get("devices", []))
        if self._pending_run:
            self._pending_run = False
            self.run_bar.set_running(False)
            self.request_run()

    def _on_progress(self, request: int, done: int, total: int) -> None:
        if request == self._request:
            self.run_bar.set_progress(done, total)

    def _on_finished(self, request: int, summary: dict) -> None:
        if request == self._request:
            self.run_bar.set_progress_text("loading result…")
            self.loader.load(request, summary)

    def _on_loaded(self, request: int, view: CheckView) -> None:
        if request != self._request:
            return
        self.run_bar.set_running(False, "done")
        self.view = view
        self.worker.discard_results_before(request)
        if view.functions:
            self.picker.set_functions(view.functions, self.document.function or view.function)
        self.jacobians.set_result(self.view)
        self._on_block_changed()
        QTimer.singleShot(0, self.result_shown.emit)

    def _on_block_changed(self, *_args) -> None:
        if self.view is not None:
            self.banner.show_result(self.view, self.jacobians.current_block())

    def _on_failed(self, request: int, error: dict) -> None:
        if request != self._request:
            return
        kind, message = error.get("kind", "error"), error.get("message", "")
        if kind == "cancelled":
            self.run_bar.set_running(False, "cancelled")
            self.banner.show_message("Cancelled.", "idle")
            return
        self.run_bar.set_running(False, "error")
        line = error.get("lineno")
        traceback_text = "\n".join(
            f"  line {f['lineno']}, in {f['name']}: {f['line']}" for f in error.get("traceback", [])
        )
        if kind in USER_CODE_KINDS:
            self.editor.show_error(message, line, traceback_text)
            where = f" (line {line})" if line else ""
            self.banner.show_message(f"Your code failed{where}", "error", message)
        else:
            self.banner.show_message("The run could not start", "error", message)
        self.run_failed.emit(message)

    def _on_crashed(self, request: int, message: str) -> None:
        self.run_bar.set_running(False, "worker restarted")
        self.banner.show_message("The worker process died", "error", message)
        self.run_failed.emit(message)

    def _zoom(self, step: int) -> None:
        size = self.editor.editor.font().pointSize() + step
        self.editor.set_font_size(max(7, min(32, size)))

    # --- closing ---------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_keep_changes():
            event.ignore()
            return
        self._save_settings()
        self.worker.shutdown()
        event.accept()
