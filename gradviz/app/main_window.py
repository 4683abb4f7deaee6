"""The main window: picker and editor on the left, the run bar on top, the Jacobians side by
side in the centre with the autograd graph below them, the memory study beside or below them
(``window_layout`` picks the arrangement for the window's size).

It builds the panels and their state objects and wires them to the run controller, which owns the
worker's queue; panels are docks, and the layout, the last file and the run settings persist.
Presentation mode (F11) is full screen with the controls hidden, one text scale for every panel,
a high-contrast theme, and a clicker's keys stepping through a lecture (``presenter``).
"""

from __future__ import annotations

import base64
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QWidget,
)

from gradviz.app import saved_layout, shortcuts_dialog, window_layout
from gradviz.app.exports import Exports
from gradviz.app.failures import describe_failure
from gradviz.app.figures import FigurePanel
from gradviz.app.panels import check_options
from gradviz.app.panels.editor_panel import EditorPanel
from gradviz.app.panels.graph_panel import GraphPanel
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.panels.memory_panel import MemoryPanel
from gradviz.app.panels.output_panel import OutputPanel
from gradviz.app.panels.picker_panel import PickerPanel
from gradviz.app.panels.run_bar import RunBar
from gradviz.app.panels.verdict_banner import VerdictBanner
from gradviz.app.preferences import Preferences, settings_store
from gradviz.app.presentation import PresentationMode
from gradviz.app.recovery import RecoveryStore
from gradviz.app.region_link import RegionLink
from gradviz.app.result_loader import ResultLoader
from gradviz.app.run_controller import CheckRequest, RunController
from gradviz.app.screen_fit import ScreenFit
from gradviz.app.source_controller import SourceController
from gradviz.app.state import CurrentResult, MemorySettings, RunSettings, SourceDocument
from gradviz.app.theme import ViewSettings, style_sheet
from gradviz.app.why_link import WhyLink
from gradviz.app.worker_client import WorkerClient
from gradviz.schema.graph import GraphModel
from gradviz.schema.results import CheckResult
from gradviz.schema.session import SUFFIX, Session, SessionError, save_session

DEFAULT_EXAMPLE = "linear"
SESSION_FILTER = f"gradviz sessions (*{SUFFIX})"
LAYOUT_AUTO_KEY = "window/layout_auto"  # False once the user has arranged the docks
FORWARD_KEYS = (Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_Space)
BACK_KEYS = (Qt.Key.Key_PageUp, Qt.Key.Key_Left, Qt.Key.Key_Up)
KEYS_HELP = (  # keys that are not menu items, for Help → Keyboard shortcuts
    ("Tab / Shift+Tab", "indent / dedent (four spaces) in the editor"),
    ("Home", "first non-blank character of the line, then its start"),
    ("Enter", "new line, indented; one level more after a ':'"),
    ("← → ↑ ↓, Page Up / Down", "step through the backward (when the graph has the focus)"),
    ("double-click a heatmap", "reset the zoom"),
    ("mouse wheel / drag", "zoom / pan the heatmaps and the graph"),
    (
        "Presentation: Page Down, →, ↓, Space",
        "next: run, the worst cell, the backward steps, the memory study, the next example",
    ),
    ("Presentation: Page Up, ←, ↑", "back: the previous backward step, the previous example"),
    ("Presentation: Esc", "leave presentation mode (when nothing runs)"),
)


class MainWindow(QMainWindow):
    result_shown = Signal()  # a result has been drawn (tests and --screenshot wait on it)
    memory_shown = Signal()  # the memory study has been drawn
    run_failed = Signal(str)  # the message shown for a failed run

    def __init__(
        self, settings: QSettings | None = None, *, auto_run: bool = True, worker: WorkerClient | None = None
    ) -> None:
        """``worker``: one already started (the launcher starts it before importing this module, so
        torch imports while Qt and pyqtgraph do); by default a fresh one."""
        super().__init__()
        self.settings_store, settings_problems = (settings, []) if settings is not None else settings_store()
        self.preferences = Preferences(self.settings_store)
        self.preferences.dropped.extend(settings_problems)
        self.setWindowTitle("gradviz")
        self.resize(*window_layout.default_size())
        self.screen_fit = ScreenFit(self, window_layout.MIN_SIZE)  # the frame stays on the screen
        self.run_settings = RunSettings(parent=self)
        self.memory_options = MemorySettings(parent=self)
        self.document = SourceDocument()
        self.current = CurrentResult(self)
        self._summary: dict = {}  # the worker's answer to the check being loaded
        self.recovery = RecoveryStore()
        if worker is None:
            worker = WorkerClient(self)
            worker.start()  # before the panels are built: torch imports while the window is made
        worker.setParent(self)
        self.worker = worker
        self.worker.ready.connect(self._on_worker_ready)  # devices first; then the controller sends what waits
        self.controller = RunController(self.worker, self)
        self.loader = ResultLoader(self)
        self.view = ViewSettings(self)
        view = self.view
        self.picker = PickerPanel(view=view)
        self.editor = EditorPanel(view=view)
        self.run_bar = RunBar(self.run_settings, view=view)
        self.banner = VerdictBanner(view=view)
        self.jacobians = JacobianPanel(view=view)
        self.graph = GraphPanel(view=view)
        self.memory = MemoryPanel(self.memory_options, view=view)
        self.output = OutputPanel()
        self.source = SourceController(
            self, self.editor, self.picker, self.document, self.preferences, self.recovery,
            run_settings=self.run_settings, memory_options=self.memory_options,
        )  # fmt: skip
        self.layout_manager = window_layout.WindowLayout(self, {
            "run_bar": self.run_bar, "banner": self.banner, "jacobians": self.jacobians, "picker": self.picker,
            "editor": self.editor, "output": self.output, "graph": self.graph, "memory": self.memory,
        })
        self.docks = self.layout_manager.docks
        self.presentation = PresentationMode(self)
        self.presenter = self.presentation.presenter
        self._sent: dict[int, tuple] = {}  # what each check in flight was asked for
        self._shown: tuple | None = None  # what the result on screen was asked for
        self._last_error = False  # the last run failed: the result on screen is older
        self.exports = Exports(self)
        for panel in (self.jacobians, self.graph, self.memory):
            self.exports.register_figures(panel)
        self._last_request: CheckRequest | None = None  # what the latest Run asked for
        self._build_actions()
        self.why = WhyLink(self)
        self.regions = RegionLink(self)
        self._connect()
        self._restore()
        # layout and settings are saved a moment after each change, not only at a clean exit
        self.layout_saver = window_layout.LayoutSaver(self, self.docks.values(), self._save_settings)
        self.layout_saver.watch(self.run_settings, self.memory_options, self.document)
        if self.worker.is_ready:  # a worker started before the window may have answered already
            self._on_worker_ready(self.worker.info)
        if auto_run:  # only a built-in example runs by itself (see run_at_launch)
            self.source.when_idle(self.run_at_launch)

    def _build_actions(self) -> None:
        menus = {name: self.menuBar().addMenu(title) for name, title in (
            ("file", "&File"), ("edit", "&Edit"), ("view", "&View"), ("run", "&Run"), ("help", "&Help"),
        )}
        self.actions: dict[str, QAction] = {}
        standard = QKeySequence.StandardKey
        for name, text, shortcuts, slot, menu in (
            ("new", "&New Function…", [standard.New], self.source.new_function, "file"),
            ("open", "&Open…", [standard.Open], self.source.open_dialog, "file"),
            ("save", "&Save", [standard.Save], self.source.save, "file"),
            ("save_as", "Save &As…", [standard.SaveAs], self.source.save_as, "file"),
            ("open_session", "Open Sess&ion…", ["Ctrl+Shift+O"], self.open_session_dialog, "file"),
            ("save_session", "Save Sessio&n…", ["Ctrl+Alt+S"], self.save_session_dialog, "file"),
            ("export", "&Export figures and data…", ["Ctrl+E"], self.exports.export_dialog, "file"),
            ("quit", "&Quit", [standard.Quit], self.close, "file"),
            ("undo", "&Undo", [standard.Undo], self.editor.editor.undo, "edit"),
            ("redo", "&Redo", [standard.Redo], self.editor.editor.redo, "edit"),
            ("find", "&Find…", [standard.Find], self.editor.find, "edit"),
            ("copy_markdown", "Copy worst cells as &Markdown", ["Ctrl+Shift+M"], lambda: self.copy_worst_cells("markdown"), "edit"),
            ("copy_latex", "Copy worst cells as &LaTeX", ["Ctrl+Shift+L"], lambda: self.copy_worst_cells("latex"), "edit"),
            ("presentation", "&Presentation mode", ["F11"], self.toggle_presentation, "view"),
            ("bigger", "&Larger text", ["Ctrl+=", "Ctrl++", standard.ZoomIn], lambda: self.presentation.step_text(1), "view"),
            ("smaller", "&Smaller text", ["Ctrl+-", standard.ZoomOut], lambda: self.presentation.step_text(-1), "view"),
            ("reset_text", "&Normal text size", ["Ctrl+0"], lambda: setattr(self.view, "scale", 1.0), "view"),
            ("contrast", "&High contrast", ["Ctrl+Shift+H"], self._toggle_contrast, "view"),
            ("quiz", "&Quiz: hide the bug comments", ["Ctrl+Shift+Q"], self._toggle_quiz, "view"),
            ("reset_layout", "&Reset layout", [], self.reset_layout, "view"),
            ("run", "&Run", ["Ctrl+Return", "Ctrl+Enter"], self.request_run, "run"),
            ("cancel", "&Cancel", ["Esc"], self._on_escape, "run"),
            ("check_options", "gradcheck &options…", [check_options.SHORTCUT], self.run_bar.options_button.open_dialog, "run"),
            ("worst", "Go to &worst cell", ["Ctrl+W"], self.jacobians.go_to_worst, "run"),
            ("step_next", "Backward step &forward", ["Alt+Right"], lambda: self._step_graph(1), "run"),
            ("step_prev", "Backward step &back", ["Alt+Left"], lambda: self._step_graph(-1), "run"),
            ("next_example", "&Next example", ["Ctrl+PgDown"], self.presenter_next_example, "run"),
            ("prev_example", "&Previous example", ["Ctrl+PgUp"], self.presenter_previous_example, "run"),
            ("shortcuts", "&Keyboard shortcuts", ["F1"], self.show_shortcuts, "help"),
        ):
            action = QAction(text, self)
            action.setShortcuts([QKeySequence(k) for k in shortcuts])
            action.triggered.connect(slot)
            menus[menu].addAction(action)
            self.addAction(action)
            self.actions[name] = action
        for name in ("presentation", "contrast", "quiz"):
            self.actions[name].setCheckable(True)
        self.actions["presentation"].setToolTip("Full screen, controls hidden, large high-contrast text (F11)")
        menus["run"].addAction(self.source.run_known_action)
        menus["file"].insertAction(self.actions["quit"], self.source.recover_action)
        menus["view"].insertSeparator(self.actions["reset_layout"])
        menus["view"].addSeparator()
        self._view_menu = menus["view"]
        for dock in self.docks.values():
            menus["view"].addAction(dock.toggleViewAction())
        # the presentation button on the run bar (presentation mode has its own bar: presentation_views)
        present = QAction("Present", self)
        present.setToolTip(self.actions["presentation"].toolTip())
        present.triggered.connect(self.toggle_presentation)
        self.run_bar.addSeparator()
        self.run_bar.addAction(present)

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
        controller.memory_started.connect(lambda: self.memory.set_measuring(True))
        controller.memory_progress.connect(self.memory.set_progress)
        controller.memory_paused.connect(
            lambda: self.memory.set_measuring(False, "Stopped for the run; it measures again after it.")
        )
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(lambda request, message: self._on_check_failed(request, {"kind": "io", "message": message}))
        self.current.changed.connect(self._on_result_changed)
        self.jacobians.block_changed.connect(self._on_block_changed)
        self.memory.measure_requested.connect(self.request_memory)
        self.graph.node_selected.connect(self._on_node_selected)
        # what is on screen against what is in the editor
        self.editor.text_edited.connect(self._update_stale)
        self.document.path_changed.connect(self._on_document_changed)
        self.document.function_changed.connect(self._update_stale)
        for name in RunSettings.FIELDS:
            getattr(self.run_settings, f"{name}_changed").connect(self._update_stale)
        # the tree's highlight follows the document, also when a load was cancelled
        self.picker.builtin_chosen.connect(self._show_document_in_picker)
        self.picker.file_chosen.connect(self._show_document_in_picker)
        self.view.high_contrast_changed.connect(self._on_contrast_changed)
        self.view.subscribe(lambda: self.setStyleSheet(style_sheet(self.view.theme)))  # controls' text size
        self.view.quiz_changed.connect(self.actions["quiz"].setChecked)
        self.presenter.acted.connect(lambda what: self.statusBar().showMessage(f"▶ {what}", 3000))
        QApplication.instance().installEventFilter(self.presentation)

    # --- persistence -----------------------------------------------------------------------
    def _restore(self) -> None:
        """Layout, settings and the last source as the last launch left them; every value is
        checked, and a bad one is dropped, named in the status bar and removed from the file."""
        prefs = self.preferences
        prefs.dropped.extend(saved_layout.restore(self, self.settings_store))  # never restoreState after restoreGeometry
        # the user's own arrangement only where their saved layout was restored
        auto = self.settings_store.value(LAYOUT_AUTO_KEY, True) if self.settings_store.contains(saved_layout.STATE_KEY) else True
        if str(auto).lower() in ("false", "0"):
            self.layout_manager.auto = False
            self.layout_manager.kind = "custom"  # the user's own arrangement, as restored
        else:
            # the arrangement for this size, with the docks the user closed (restored above) still closed
            self.layout_manager.place(
                window_layout.size_class(self.width(), self.height()), keep_hidden=self.settings_store.contains("window/state")
            )
        prefs.restore_run(self.run_settings)
        self.run_settings.device = "cpu"  # CUDA is chosen again once the worker has seen it
        prefs.restore_values("memory", self.memory_options)
        self.picker.set_recent(prefs.recent())
        self.source.restore_last(prefs.last_source(), DEFAULT_EXAMPLE)
        if prefs.dropped:
            self.source.notify("Dropped from the saved settings: " + "; ".join(prefs.dropped) + ".")

    def _save_settings(self) -> None:
        """Written a moment after each change (``LayoutSaver``) and at exit. While presenting, the
        lecture's full-screen layout is not the one to keep: the everyday one stays saved."""
        prefs = self.preferences
        if not self.presentation.active:
            prefs.save_layout(self)
            self.settings_store.setValue(LAYOUT_AUTO_KEY, self.layout_manager.auto)
        prefs.save_run(self.run_settings)
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
        """After a crash: list every unsaved text a dead gradviz left behind (restore, save or
        discard each; only a discarded one is deleted)."""
        return self.source.offer_recovery()

    @property
    def modified(self) -> bool:
        return self.source.modified

    # --- exports (``exports.Exports``) ---------------------------------------------------------
    def export_figures(self, folder: Path, **options) -> list[Path]:
        return self.exports.export_figures(folder, **options)

    def copy_worst_cells(self, style: str = "markdown") -> str:
        return self.exports.copy_worst_cells(style)

    # --- running ---------------------------------------------------------------------------
    def check_request(self) -> CheckRequest:
        """A check of the editor's code (or the target) with the run bar's settings."""
        target, inputs_path = self.document.target or (None, None)
        return CheckRequest(
            source=self.editor.text(),
            filename=self.document.filename,
            function=self.document.function,
            settings=self.run_settings.check_settings(),
            timeout=self.run_settings.timeout or None,
            target=target,
            inputs_path=inputs_path,
        )

    def request_run(self) -> None:
        """Run the editor's code (or the target) now if the worker is free, else as soon as it is."""
        self.run_request(self.check_request())

    def run_request(self, request: CheckRequest) -> None:
        """Run this check (the Why? panel's re-runs change its settings)."""
        self._last_request = request
        self.source.note_run()
        self.controller.run_check(request)

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
        self.editor.editor.setFocus()  # back to the code, whatever had the focus

    def _on_worker_ready(self, info: dict) -> None:
        devices = info.get("devices", [])
        self.run_bar.set_devices(devices)
        self.memory.set_devices([d["name"] for d in devices if d.get("available")])

    def _on_check_queued(self, for_worker: bool) -> None:
        self.run_bar.set_running(True)
        if for_worker:
            self.banner.show_running(self._running_name(), "Starting the worker (importing torch)…")
            self.run_bar.set_progress_text("starting the worker…")
        else:
            self.banner.show_running(self._running_name(), "Waiting for the memory study to stop…")
            self.run_bar.set_progress_text("waiting for the memory study…")
        self._update_stale()

    def _on_check_started(self, request: int) -> None:
        self.editor.clear_error()
        self.output.clear()
        self.run_bar.set_running(True)
        self._sent[request] = self._snapshot()
        self.banner.show_running(self._running_name(), "Esc cancels the run.")
        self._update_stale()

    def _on_check_finished(self, request: int, summary: dict) -> None:
        self._summary = summary
        self.run_bar.set_progress_text("loading result…")
        self.loader.load(request, summary, self.jacobians.view_pixels())

    def _on_loaded(self, request: int, result: CheckResult, displays: dict) -> None:
        if not self.controller.is_current(request):  # a newer run has started meanwhile
            return
        self.run_bar.set_running(False, "done")
        self.controller.result_shown(request)
        self._shown = self._sent.pop(request, None)
        self._last_error = False
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
        self.graph.set_graph(GraphModel.from_dict(self.current.graph) if self.current.graph else None, self.current.graph_error)
        self.presenter.reset()
        self.banner.show_result(result, self.jacobians.current_block())
        self.why.on_result(self._last_request, result)
        self._update_stale()

    def _on_block_changed(self, *_args) -> None:
        if self.current.result is not None and self.banner.state in ("passed", "failed"):
            self.banner.show_result(self.current.result, self.jacobians.current_block())

    def _on_check_failed(self, request: int, error: dict) -> None:
        if not self.controller.is_current(request):
            return
        failure = describe_failure(error, self.document.filename)
        self._sent.pop(request, None)
        self._last_error = failure.state == "error"
        self.run_bar.set_running(False, failure.progress)
        if failure.mark_editor:
            self.editor.show_error(failure.message, failure.line, failure.traceback)
        self.banner.show_message(failure.headline, failure.state, failure.details)
        self._update_stale()
        if failure.reported is not None:
            self.run_failed.emit(failure.reported)

    def _on_worker_died(self, message: str) -> None:
        self.run_bar.set_running(False, "worker restarted")
        self.banner.show_message("The worker process died", "error", message)
        self._sent.clear()
        self._last_error = True
        self._update_stale()
        self.run_failed.emit(message)

    def _on_memory_finished(self, payload: dict) -> None:
        self.memory.set_measuring(False)
        self.memory.set_result(payload)
        QTimer.singleShot(0, self.memory_shown.emit)

    # --- what is on screen against what is in the editor -------------------------------------
    def _snapshot(self) -> tuple:
        """What a run is asked for: the code, the Function, the settings, the document."""
        return (
            self.editor.text(),
            self.document.function,
            tuple(sorted(self.run_settings.to_dict().items())),
            self.document.target,
            self.document.title,
        )

    def _running_name(self) -> str:
        if self.document.function:
            return self.document.function
        result = self.current.result
        if result is not None and self._shown is not None and self._shown[4] == self.document.title:
            return result.function
        return self.document.title

    def stale_reason(self) -> str | None:
        """Why the result on screen no longer matches the editor, in words; None when it does."""
        if self.current.result is None or self._shown is None:
            return None
        name = self.current.result.function
        code, function, settings, target, title = self._shown
        if self.controller.busy:
            return f"From the previous run of {name}: a new run is in flight."
        if self._last_error:
            return f"From the previous run of {name}: the last run failed (see above)."
        if title != self.document.title or target != self.document.target:
            return f"From the previous run of {name} in {title}: another file is in the editor."
        if code != self.editor.text():
            return f"From the previous run of {name}: the code has changed since. Run (Ctrl+Enter) to update."
        if function not in (self.document.function, None) or settings != self._snapshot()[2]:
            return f"From the previous run of {name}, with other settings. Run (Ctrl+Enter) to update."
        return None

    def _update_stale(self, *_args) -> None:
        reason = self.stale_reason()
        self.jacobians.set_stale(reason)
        self.graph.set_stale(reason)
        self.banner.set_stale(reason)
        self.why.set_stale(reason)

    def _on_document_changed(self) -> None:
        self._show_document_in_picker()
        self.presenter.reset()
        self._update_stale()

    def _show_document_in_picker(self, *_args) -> None:
        path = self.document.path if self.document.path and not self.document.builtin_name else None
        self.picker.show_document(self.document.builtin_name, str(path) if path else None)

    # --- step-through: the rows one backward call fills ---------------------------------------
    def _step_graph(self, delta: int) -> None:
        self.graph.step(delta)

    def _on_node_selected(self, node_id: int) -> None:
        """At your Function's node, mark on the analytic map the row one backward call with a
        one-hot grad_output returns."""
        node = self.graph.node(node_id)
        result = self.current.result
        self.jacobians.clear_rows()
        if node is None or node.kind != "custom" or result is None or not result.blocks:
            return
        if not self.graph.stepping():  # a new graph selects your Function by itself: no step yet
            return
        outputs = self.graph.outputs_entering(node_id)
        block = self.jacobians.current_block()
        if block is None or (outputs and block.output not in outputs):
            index = next((k for k, b in enumerate(result.blocks) if b.output in outputs), None)
            if index is None:
                return
            self.jacobians.set_block(index)
            block = self.jacobians.current_block()
        row = (self.jacobians.highlighted_cell() or block.worst or (0, 0))[0]
        out_index, _ = block.cell_index(row, 0)
        where = f"out{block.output}[{','.join(map(str, out_index))}]" if out_index else f"out{block.output}"
        self.jacobians.mark_rows(
            row,
            row,
            f"One backward call with grad_output one-hot at {where} returns row {row} of J (marked): "
            f"∂{where}/∂{result.inputs[block.input].name}. The analytic Jacobian is {block.shape[0]:,} such "
            "calls, one per row.",
        )

    # --- presentation mode, text scale, contrast, quiz -----------------------------------------
    def presenter_next_example(self) -> None:
        self.presenter.change_example(+1)

    def presenter_previous_example(self) -> None:
        self.presenter.change_example(-1)

    def toggle_presentation(self) -> None:
        self.presentation.toggle()

    def set_presentation(self, on: bool) -> None:
        self.presentation.set(on)

    def in_presentation(self) -> bool:
        return self.presentation.active

    def _toggle_contrast(self) -> None:
        self.view.high_contrast = not self.view.high_contrast

    def _toggle_quiz(self) -> None:
        self.view.quiz = not self.view.quiz

    def _on_contrast_changed(self, on: bool) -> None:
        self.actions["contrast"].setChecked(on)
        self.setStyleSheet(style_sheet(self.view.theme))

    def _on_escape(self) -> None:
        """Esc cancels a run; with nothing running, it leaves presentation mode."""
        if self.controller.busy or not self.presentation.active:
            self.cancel_run()
        else:
            self.set_presentation(False)

    def reset_layout(self) -> None:
        """The arrangement for the window's size, whatever the user did to the docks."""
        self.layout_manager.auto = True
        self.layout_manager.kind = None
        self.layout_manager.adapt()

    def add_panel(self, title: str, widget: QWidget, *, beside: str = window_layout.MEMORY_DOCK, scroll: bool = True):
        """Another panel as a dock, tabbed beside the memory study (the Why? panel goes here);
        it scrolls rather than force its minimum size on the window."""
        dock = self.layout_manager.add_dock(title, widget, beside=beside, scroll=scroll)
        self._view_menu.addAction(dock.toggleViewAction())
        if isinstance(widget, FigurePanel):
            self.exports.register_figures(widget)
        return dock

    def show_shortcuts(self) -> QDialog:
        """Help → Keyboard shortcuts: every menu shortcut and the keys that are not in a menu."""
        self.shortcuts_dialog = shortcuts_dialog.show_shortcuts(self, self.actions.values(), KEYS_HELP)
        return self.shortcuts_dialog

    # --- size ---------------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.layout_manager.adapt()

    # --- sessions --------------------------------------------------------------------------
    def open_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self.exports.last_folder(), SESSION_FILTER)
        if path:
            self.exports.remember_folder(Path(path))
            self.open_session(Path(path))

    def save_session_dialog(self) -> None:
        start = Path(self.exports.last_folder()) / f"{Path(self.document.filename).stem or 'untitled'}{SUFFIX}"
        path, _ = QFileDialog.getSaveFileName(self, "Save session", str(start), SESSION_FILTER)
        if path:
            self.exports.remember_folder(Path(path))
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
        if self.presentation.active:
            self.set_presentation(False)  # the everyday layout is the one saved
        self._save_settings()
        self.layout_saver.stop()
        self.source.close()
        self.worker.shutdown()
        event.accept()
