"""The main window: picker and editor on the left, the run bar on top, the Jacobians side by
side in the centre with the autograd graph below them, the memory study beside or below them
(``window_layout`` picks the arrangement for the window's size).

It builds the panels and their state objects and wires them to the run controller, which owns the
worker's queue; panels are docks, and the layout, the last file and the run settings persist.
Presentation mode (F11) is full screen with the controls hidden, one text scale for every panel,
a high-contrast theme, and a clicker's keys stepping through a lecture (``presenter``).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QDialog, QMainWindow, QWidget

from gradviz.app import actions, saved_layout, window_layout
from gradviz.app.audit_link import AuditLink
from gradviz.app.exports import Exports
from gradviz.app.failures import describe_failure
from gradviz.app.figures import FigurePanel
from gradviz.app.memory_display import MemoryResult
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
from gradviz.app.recent_menu import RecentMenu
from gradviz.app.recovery import RecoveryStore
from gradviz.app.region_link import RegionLink
from gradviz.app.result_loader import LoadedCheck, ResultLoader
from gradviz.app.run_controller import RunController
from gradviz.app.runner import Runner
from gradviz.app.screen_fit import ScreenFit
from gradviz.app.session_files import SessionFiles
from gradviz.app.source_controller import SourceController
from gradviz.app.state import CurrentResult, MemorySettings, RunSettings, RunSnapshot, SourceDocument
from gradviz.app.step_through import mark_backward_row
from gradviz.app.theme import ViewSettings, style_sheet
from gradviz.app.why_link import WhyLink
from gradviz.app.worker_client import WorkerClient
from gradviz.schema.requests import MemoryRequest
from gradviz.schema.session import Session

DEFAULT_EXAMPLE = "linear"
LAYOUT_AUTO_KEY = "window/layout_auto"  # False once the user has arranged the docks


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
        self.recovery = RecoveryStore()
        if worker is None:
            worker = WorkerClient(self)
            worker.start()  # before the panels are built: torch imports while the window is made
        worker.setParent(self)
        self.worker = worker
        self.worker.ready.connect(self._on_worker_ready)  # devices first; then the controller sends what waits
        self.controller = RunController(self.worker, self, now=self._snapshot)
        self.shown_run = self.controller.shown  # what was asked and what is shown
        self.view = ViewSettings(self)
        view, current, shown = self.view, self.current, self.shown_run
        # each view subscribes to the state it shows: the check on screen, and why it is stale
        self.picker = PickerPanel(view=view, document=self.document, current=current)
        self.editor = EditorPanel(view=view)
        self.run_bar = RunBar(self.run_settings, view=view)
        self.jacobians = JacobianPanel(view=view, current=current, shown=shown)
        self.banner = VerdictBanner(view=view, current=current, shown=shown, blocks=self.jacobians)
        self.loader = ResultLoader(self.jacobians.view_pixels, self)
        self.graph = GraphPanel(view=view, current=current, shown=shown)
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
        self.runner = Runner(
            self.controller, self.document, self.run_settings, self.source.code_for_run, before_run=self.source.note_run
        )
        self.presentation = PresentationMode(
            self, layout=self.layout_manager, view=view, run_bar=self.run_bar, banner=self.banner, editor=self.editor,
            jacobians=self.jacobians, graph=self.graph, document=self.document, runner=self.runner,
            load_example=self.load_builtin, current=current,
        )  # fmt: skip
        self.presenter = self.presentation.presenter
        say = self.statusBar().showMessage
        self.exports = Exports(
            self, settings=self.settings_store, current=self.current, document=self.document,
            jacobians=self.jacobians, graph=self.graph, memory=self.memory, say=say,
        )  # fmt: skip
        for panel in (self.jacobians, self.graph, self.memory):
            self.exports.register_figures(panel)
        self.sessions = SessionFiles(
            self, code=self.editor.text, document=self.document, run_settings=self.run_settings,
            memory_options=self.memory_options, folders=self.exports, open_session=self.open_session,
        )  # fmt: skip
        self._build_actions()
        self.why = WhyLink(
            runner=self.runner, controller=self.controller, current=self.current, jacobians=self.jacobians,
            settings=self.run_settings, add_panel=self.add_panel, register_figures=self.exports.register_figures,
            say=say, parent=self,
        )  # fmt: skip
        self.regions = RegionLink(
            self.jacobians, self.controller, self.current, (self.editor.text_edited, self.document.path_changed), self
        )
        self._connect()
        self.audit_link = AuditLink(self)  # File → Audit a model… and the model view
        self._restore()
        # layout and settings are saved a moment after each change, not only at a clean exit
        self.layout_saver = window_layout.LayoutSaver(self, self.docks.values(), self._save_settings)
        self.layout_saver.watch(self.run_settings, self.memory_options, self.document)
        if self.worker.is_ready:  # a worker started before the window may have answered already
            self._on_worker_ready(self.worker.info)
        if auto_run:  # only a built-in example runs by itself (see run_at_launch)
            self.source.when_idle(self.run_at_launch)

    def _build_actions(self) -> None:
        """The menus and shortcuts (``actions.ACTIONS``), each name bound to what it does here."""
        source, editor, presentation, graph = self.source, self.editor.editor, self.presentation, self.graph
        view = self.view
        menus, self.actions = actions.build_actions(self, {
            "new": source.new_function, "open": source.open_dialog, "save": source.save, "save_as": source.save_as,
            "open_session": self.sessions.open_dialog, "save_session": self.sessions.save_dialog,
            "export": self.exports.export_dialog, "close": self.close, "quit": self.close,
            "undo": editor.undo, "redo": editor.redo, "find": self.editor.find,
            "copy_markdown": lambda: self.copy_worst_cells("markdown"),
            "copy_latex": lambda: self.copy_worst_cells("latex"),
            "presentation": presentation.toggle,
            "bigger": lambda: presentation.step_text(1), "smaller": lambda: presentation.step_text(-1),
            "reset_text": lambda: setattr(view, "scale", 1.0),
            "contrast": lambda: setattr(view, "high_contrast", not view.high_contrast),
            "quiz": lambda: setattr(view, "quiz", not view.quiz),
            "reset_layout": self.reset_layout,
            "run": self.runner.run, "cancel": self._on_escape,
            "check_options": self.run_bar.options_button.open_dialog, "worst": self.jacobians.go_to_worst,
            "error_line": self.editor.go_to_error,
            "step_next": lambda: graph.step(1), "step_prev": lambda: graph.step(-1),
            "next_example": lambda: self.presenter.change_example(+1),
            "prev_example": lambda: self.presenter.change_example(-1),
            "shortcuts": self.show_shortcuts, "guide": self.show_guide, "about": self.show_about,
        })  # fmt: skip
        menus["run"].addAction(self.source.run_known_action)
        menus["file"].insertAction(self.actions["quit"], self.source.recover_action)
        self.recent_menu = RecentMenu(
            self.preferences, source.open_file, lambda: self.picker.set_recent([]), menus["file"]
        )
        menus["file"].insertMenu(self.actions["save"], self.recent_menu)
        menus["view"].insertSeparator(self.actions["reset_layout"])
        menus["view"].addSeparator()
        self._view_menu = menus["view"]
        for dock in self.docks.values():
            menus["view"].addAction(dock.toggleViewAction())
        # the presentation button on the run bar (presentation mode has its own bar: presentation_views)
        present = QAction("Present", self)
        present.setToolTip(actions.PRESENTATION_TIP)
        present.triggered.connect(presentation.toggle)
        self.run_bar.add_mode(present)

    def _connect(self) -> None:
        self.source.title_changed.connect(self.setWindowTitle)
        self.run_bar.run_requested.connect(self.runner.run)
        self.run_bar.cancel_requested.connect(self.cancel_run)
        self.worker.output.connect(self.output.append)
        controller = self.controller
        controller.check_queued.connect(self._on_check_queued)
        controller.check_started.connect(self._on_check_started)
        controller.progress_unit.connect(self.run_bar.set_unit)
        controller.progress.connect(self.run_bar.set_progress)
        controller.check_finished.connect(lambda *_: self.run_bar.set_progress_text("loading result…"))
        controller.check_finished.connect(self.loader.load)
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
        self.memory.measure_requested.connect(lambda _options: self.measure_memory())
        self.graph.node_selected.connect(
            lambda node_id: mark_backward_row(self.graph, self.jacobians, self.current.result, node_id)
        )
        # what is on screen against what is in the editor: what the window shows now changes with these
        self.shown_run.watch(
            self.editor.text_edited, self.document.path_changed, self.document.function_changed, self.run_settings.changed
        )
        self.view.high_contrast_changed.connect(self._on_contrast_changed)
        self.view.subscribe(lambda: self.setStyleSheet(style_sheet(self.view.theme)))  # controls' text size
        self.view.quiz_changed.connect(self.actions["quiz"].setChecked)
        self.presentation.active_changed.connect(self.actions["presentation"].setChecked)
        self.presenter.acted.connect(lambda what: self.statusBar().showMessage(f"▶ {what}", 3000))

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
        self.run()
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
    def run(self) -> None:
        """Run the editor's code (or the target) now if the worker is free, else as soon as it is."""
        self.runner.run()

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
        self.run()

    def measure_memory(self) -> None:
        """Measure the stack the memory panel shows, once nothing runs or waits."""
        self.controller.measure_memory(MemoryRequest(self.memory_options.options()))

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
            self.banner.show_running(self.shown_run.running_name(), "Starting the worker (importing torch)…")
            self.run_bar.set_progress_text("starting the worker…")
        else:
            self.banner.show_running(self.shown_run.running_name(), "Waiting for the memory study to stop…")
            self.run_bar.set_progress_text("waiting for the memory study…")
        self.shown_run.refresh()

    def _on_check_started(self, request: int) -> None:
        self.editor.clear_error()
        self.output.clear()
        self.run_bar.set_running(True)
        self.banner.show_running(self.shown_run.running_name(), "Esc cancels the run.")

    def _on_loaded(self, request: int, loaded: LoadedCheck) -> None:
        if not self.controller.is_current(request):  # a newer run has started meanwhile
            return
        self.source.keep_pending_text()  # drawing the result holds the GUI thread
        self.run_bar.set_running(False, "done")
        self.controller.note_shown(request, loaded.result.function)
        self.current.set(
            loaded.result, request=request, graph=loaded.graph, graph_error=loaded.graph_error, displays=loaded.displays
        )
        if self.memory.result() is None and not self.controller.memory_asked:  # populate it once at launch
            self.measure_memory()
        QTimer.singleShot(0, self.result_shown.emit)

    def _on_check_failed(self, request: int, error: dict) -> None:
        if not self.controller.is_current(request):
            return
        failure = describe_failure(error, self.document.filename)
        self.controller.note_failed(request, error=failure.state == "error")
        self.run_bar.set_running(False, failure.progress)
        if failure.mark_editor:
            self.editor.show_error(failure.message, failure.line, failure.traceback)
        self.banner.show_message(failure.headline, failure.state, failure.details)
        self.shown_run.refresh()
        if failure.reported is not None:
            self.run_failed.emit(failure.reported)

    def _on_worker_died(self, message: str) -> None:
        self.run_bar.set_running(False, "worker restarted")
        self.banner.show_message("The worker process died", "error", message)
        self.run_failed.emit(message)

    def _on_memory_finished(self, result: MemoryResult) -> None:
        """``result``: the study the controller read from the worker's dict (an unreadable one
        arrives as ``memory_failed``)."""
        self.memory.set_measuring(False)
        self.memory.set_result(result)
        QTimer.singleShot(0, self.memory_shown.emit)

    # --- what is on screen against what is in the editor (``ShownRun`` decides) ----------------
    def _snapshot(self) -> RunSnapshot:
        """What a run is asked for: the code, the Function, the settings, the document."""
        return RunSnapshot(
            code=self.editor.version(),
            function=self.document.function,
            settings=tuple(sorted(self.run_settings.to_dict().items())),
            target=self.document.target,
            title=self.document.title,
        )

    def stale_reason(self) -> str | None:
        """Why the result on screen no longer matches the editor, in words; None when it does."""
        return self.shown_run.stale_reason()

    # --- presentation mode, text scale, contrast, quiz -----------------------------------------
    def set_presentation(self, on: bool) -> None:
        self.presentation.set(on)

    def in_presentation(self) -> bool:
        return self.presentation.active

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
        from gradviz.app import shortcuts_dialog  # imported when first asked for: not at window start

        self.shortcuts_dialog = shortcuts_dialog.show_shortcuts(self, self.actions.values(), actions.KEYS_HELP)
        return self.shortcuts_dialog

    def show_about(self) -> QDialog:
        """Help → About gradviz: version, the versions it runs on, licence, where the docs are."""
        from gradviz.app import help_dialogs

        self.about_dialog = help_dialogs.show_about(self)
        return self.about_dialog

    def show_guide(self) -> QDialog:
        """Help → User guide: the guide this install ships, formatted."""
        from gradviz.app import help_dialogs

        self.guide_dialog = help_dialogs.show_guide(self)
        return self.guide_dialog

    # --- size ---------------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.layout_manager.adapt()

    # --- sessions (``session_files``) ----------------------------------------------------------
    def current_session(self) -> Session:
        return self.sessions.current()

    def save_session(self, path: Path) -> bool:
        return self.sessions.save(path)

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
