"""Presentation mode (F11): full screen, one view at a time (``PresentationStage``: the code, the
Jacobians, the backward step-through, the memory study), the high-contrast theme and no text
under PRESENTATION_MIN_PX; a clicker's keys (Page Down/Up, the arrows, Space) step through a
lecture with the ``Presenter``. Leaving it puts the window, its docks, its panels and its text
back as they were.

Built from the window (any QMainWindow), its layout, its view settings and the panels it lends,
named one by one, so this module never imports the main window.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication, QMainWindow, QScrollArea, QVBoxLayout, QWidget

from gradviz.app import window_layout
from gradviz.app.presentation_row import JacobianRow
from gradviz.app.presentation_views import PresentationStage
from gradviz.app.presenter import VIEWS, Presenter
from gradviz.app.runner import Runner
from gradviz.app.state import CurrentResult, SourceDocument
from gradviz.app.theme import PRESENTATION_MIN_PX, PRESENTATION_SCALE, ViewSettings, points_for_pixels
from gradviz.schema.library import builtin_functions

FORWARD_KEYS = (Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_Space)
BACK_KEYS = (Qt.Key.Key_PageUp, Qt.Key.Key_Left, Qt.Key.Key_Up)
DOCK_VIEWS = {"code": "Code", "backward": "Autograd graph", "memory": window_layout.MEMORY_DOCK}  # view: dock lent
MIN_HEATMAP_PX = 300  # the Jacobians view's maps are never shorter (A+ stops before that)
WORST_NEIGHBOURHOOD = 9  # cells across the clicker's "worst cell" step zooms to, in any block
MIN_TITLE_GAP = 0.5  # of a title's height between the maps' titles (A+ stops before they touch)


class PresentationMode(QObject):
    """What presentation mode changed in ``window``, to put back, and the clicker's keys."""

    active_changed = Signal(bool)  # presentation mode went on or off

    def __init__(
        self,
        window: QMainWindow,
        *,
        layout: window_layout.WindowLayout,
        view: ViewSettings,
        run_bar: QWidget,
        banner: Any,
        editor: QWidget,
        jacobians: Any,
        graph: Any,
        document: SourceDocument,
        runner: Runner,
        load_example: Callable[[str], None],
        current: CurrentResult | None = None,
    ) -> None:
        """``banner``: the verdict banner (made compact); ``jacobians`` and ``graph``: the panels
        the clicker steps through; ``runner``: Run; ``load_example(name)``: a built-in example;
        a new document or a new result on screen (``current``) starts the lecture's sequence again."""
        super().__init__(window)
        self.window, self.layout, self.view = window, layout, view
        self.run_bar, self.banner, self.editor, self.jacobians = run_bar, banner, editor, jacobians
        self.graph, self.document, self.runner, self.load_example = graph, document, runner, load_example
        self._saved: dict | None = None
        self._state_after_resize: tuple[Any, Any] | None = None  # (dock state, window size) on leaving
        self.stage: PresentationStage | None = None
        self.row_of_j: JacobianRow | None = None  # beside the backward step-through, while presenting
        self._follow_backward = False  # the code view scrolls to the backward until the clicker pages
        self._graph_split: Any = None  # the graph panel's splitter as the window had it
        self._graph_column: QWidget | None = None  # the graph over the row of J, while presenting
        self._centre: QWidget | None = None
        self.presenter = Presenter(_Lecture(self), self)
        document.path_changed.connect(self.presenter.reset)
        if current is not None:
            current.changed.connect(self.presenter.reset)
        # a moment after the text size, the view or the screen changes: does the view still fit?
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(60)
        self._fit_timer.timeout.connect(self._keep_view_fitting)
        view.subscribe(self._check_fit_soon)

    def toggle(self) -> None:
        self.set(self._saved is None)

    def set(self, on: bool) -> None:
        """Full screen, one view at a time, large high-contrast text; off puts everything back."""
        w, view, layout = self.window, self.view, self.layout
        if on == (self._saved is not None):
            return
        if on:
            self._saved = {
                "state": w.saveState(),
                "maximized": w.isMaximized(),
                "full_screen": w.isFullScreen(),
                "geometry": w.saveGeometry(),
                "size": w.size(),
                "scale": view.scale,
                "contrast": view.high_contrast,
                "min_points": view.min_points,
                "auto": layout.auto,
            }
            # the clicker's keys: an app-wide filter, only while presenting (outside it the filter
            # would see every event of every widget, painting included, for nothing)
            QApplication.instance().installEventFilter(self)
            layout.presenting = True
            w.menuBar().hide()
            w.statusBar().hide()
            self.run_bar.hide()
            for dock in layout.docks.values():
                dock.hide()
            view.scale = max(view.scale, PRESENTATION_SCALE)
            self._raise_floor()
            view.scale_changed.connect(self._raise_floor)
            view.high_contrast = True
            self.banner.set_compact(True)
            self._build_stage()
            w.setCentralWidget(self.stage)
            self.stage.show()
            w.showFullScreen()
            self.show_view(VIEWS[0])
        else:
            saved, self._saved = self._saved, None
            QApplication.instance().removeEventFilter(self)
            view.scale_changed.disconnect(self._raise_floor)
            self._return_panels()
            w.menuBar().show()
            w.statusBar().show()
            self.run_bar.show()
            view.min_points = saved["min_points"]
            view.scale = saved["scale"]
            view.high_contrast = saved["contrast"]
            self.banner.set_compact(False)
            if saved["full_screen"]:
                w.showFullScreen()
            elif saved["maximized"]:
                w.showMaximized()
            else:
                w.showNormal()
                w.restoreGeometry(saved["geometry"])
            layout.presenting = False
            w.restoreState(saved["state"])
            layout.auto = saved["auto"]
            # restored into a window still laid out for the stage, the docks come back narrower
            # (Code 403 -> 362 px): restored again once the event loop has laid the window out,
            # and when the window manager gives the window its size back, if that comes later
            self._state_after_resize = (saved["state"], saved["size"])
            w.installEventFilter(self)
            QTimer.singleShot(0, lambda: self._restore_docks(saved["state"]))
            QTimer.singleShot(2000, self._stop_waiting_for_size)
        self.active_changed.emit(on)

    def _raise_floor(self, *_args) -> None:
        """The smallest text: PRESENTATION_MIN_PX at PRESENTATION_SCALE, and larger in proportion
        with each A+, so every text grows (with a fixed floor, A+ left the texts it held, check
        boxes, tabs, buttons, at 24 px until the scale passed 2)."""
        floor = points_for_pixels(PRESENTATION_MIN_PX) * max(self.view.scale, PRESENTATION_SCALE) / PRESENTATION_SCALE
        self.view.min_points = math.ceil(floor - 1e-9)

    def _build_stage(self) -> None:
        """The stage with the panels lent to it: the docks' contents and the window's centre."""
        w, view = self.window, self.view
        self._centre = w.takeCentralWidget()
        self.stage = stage = PresentationStage(view)
        stage.hold("jacobians", self._centre)
        for name, title in DOCK_VIEWS.items():
            widget = self.layout.docks[title].widget()
            if isinstance(widget, QScrollArea):  # the memory study: the panel alone, sized to the stage
                widget = widget.takeWidget()  # (in its scroll area it stacked its plots, the sweep below the fold)
            stage.hold(name, widget)
        self._graph_split = self.graph.splitter.saveState()
        for name, text, tip, slot in (
            ("back", "◀", "Back (Page Up, ←)", self.presenter.retreat),
            ("next", "▶", "Next: run, worst cell, backward steps, memory, next example (Page Down, →, Space)", self.presenter.advance),
            ("smaller", "A−", "Smaller text (Ctrl+-)", lambda: self.step_text(-1)),
            ("bigger", "A+", "Larger text (Ctrl+=)", lambda: self.step_text(1)),
        ):
            stage.add_control(name, text, tip, slot)
        quiz = stage.add_control("quiz", "", "Quiz: hide the bug comments (Ctrl+Shift+Q)", self._toggle_quiz, checkable=True)
        self._show_quiz(view.quiz)
        view.quiz_changed.connect(self._show_quiz)
        quiz.setObjectName("presentation_quiz")
        stage.add_control("leave", "✕ Leave", "Leave presentation mode (F11, Esc)", lambda: self.set(False))
        stage.view_requested.connect(self.show_view)
        stage.resized.connect(self._fit_timer.start)
        stage.resized.connect(self._show_backward_code)
        stage.resized.connect(self._widen_tensor_table)
        w.statusBar().messageChanged.connect(stage.say)  # a bound method: gone with the stage
        # the row of J a backward call fills, beside the step-through (the mark is made on the
        # Jacobians after the node is selected: copied once the event loop comes back)
        # under the graph, left of the node's story and its tensor table (which keeps its width)
        self.row_of_j = JacobianRow(view, self.jacobians)
        split = self.graph.splitter
        self._graph_column = column = QWidget()
        column.setObjectName("presentation_graph_column")
        holder = QVBoxLayout(column)
        holder.setContentsMargins(0, 0, 0, 0)
        plot = split.replaceWidget(0, column)
        holder.addWidget(plot, 1)
        holder.addWidget(self.row_of_j, 1)
        plot.show()
        self.graph.node_selected.connect(self._refresh_row_soon)

    def _widen_tensor_table(self) -> None:
        """The backward view: the node's tensor table as wide as its columns (its last, "role",
        was cut at 1280x720), the graph and the row of J beside it get the rest, at least a third."""
        if self.stage is None or self.stage.current != "backward":
            return
        split, table = self.graph.splitter, self.graph.details
        total = sum(split.sizes())
        need = table.horizontalHeader().length() + 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width()
        side = min(need, total - max(total // 3, self.graph.plot.minimumSizeHint().width()))
        if total > 0 and side > split.sizes()[1]:
            split.setSizes([total - side, side])

    def _refresh_row_soon(self, *_args) -> None:
        QTimer.singleShot(0, self._refresh_row)

    def _refresh_row(self) -> None:
        if self.stage is not None and self.row_of_j is not None:
            self.row_of_j.refresh()
            self._widen_tensor_table()

    def _return_panels(self) -> None:
        """Every lent panel back in its dock, the centre back in the window."""
        w, stage = self.window, self.stage
        self.view.quiz_changed.disconnect(self._show_quiz)
        self.graph.node_selected.disconnect(self._refresh_row_soon)
        for name, title in DOCK_VIEWS.items():
            widget = stage.release(name)
            dock = self.layout.docks[title]
            if isinstance(dock.widget(), QScrollArea):
                dock.widget().setWidget(widget)
            else:
                dock.setWidget(widget)
            widget.show()  # a widget given a new parent stays hidden until shown
        split, column = self.graph.splitter, self._graph_column
        split.replaceWidget(0, self.graph.plot)  # the graph back beside its details, the row of J gone
        self.graph.plot.show()
        column.deleteLater()
        self._graph_column = None
        split.restoreState(self._graph_split)
        stage.release("jacobians")
        w.takeCentralWidget()
        w.setCentralWidget(self._centre)
        self._centre.show()
        self._centre = None
        stage.deleteLater()
        self.stage = self.row_of_j = None

    def _toggle_quiz(self) -> None:
        self.view.quiz = not self.view.quiz

    def _show_quiz(self, on: bool) -> None:
        """The quiz button says whether quiz is on, in words and by being pressed."""
        button = self.stage.controls["quiz"]
        button.setChecked(on)
        button.setText("Quiz: on" if on else "Quiz: off")

    def show_view(self, name: str) -> None:
        """Show view ``name`` alone (the presenter and the bar's buttons call this)."""
        if self.stage is None:
            return
        self.stage.show_view(name)
        if name == "backward" and self.row_of_j is not None:
            self.row_of_j.refresh()
            QTimer.singleShot(0, self._widen_tensor_table)
        if name == "code":  # once laid out (entering, the window is not full screen yet)
            self._follow_backward = True
            QTimer.singleShot(0, self._show_backward_code)
        self._fit_timer.start()
        self.stage.setFocus()  # the clicker's keys step (a Space typed into the code would change it)

    def current_view(self) -> str:
        return self.stage.current if self.stage is not None else VIEWS[0]

    def _code(self) -> Any:
        return self.editor.editor  # the editor panel's CodeEditor (a QPlainTextEdit)

    def _show_backward_code(self) -> None:
        """The code view opened: scroll so the backward method (its decorator, its ``def``) is
        the first line, or the file's end is the last; a built-in's backward lay below the 25
        lines a 720-line screen shows."""
        if self.stage is None or self.stage.current != "code" or not self._follow_backward:
            return
        code = self._code()
        block = code.document().begin()
        while block.isValid() and not block.text().lstrip().startswith("def backward"):
            block = block.next()
        if not block.isValid():
            return
        while block.previous().isValid() and block.previous().text().lstrip().startswith("@"):
            block = block.previous()
        bar = code.verticalScrollBar()
        bar.setValue(bar.maximum())
        while bar.value() > bar.minimum() and code.firstVisibleBlock().blockNumber() > block.blockNumber():
            bar.setValue(bar.value() - 1)

    def scroll_code(self, pages: int) -> bool:
        """Page Down (1) / Page Up (-1) in the code view: a page further (two lines kept) while
        there is one; False at the end (the clicker moves on)."""
        if self.stage is None or self.stage.current != "code":
            return False
        bar = self._code().verticalScrollBar()
        if (pages > 0 and bar.value() >= bar.maximum()) or (pages < 0 and bar.value() <= bar.minimum()):
            return False
        self._follow_backward = False
        bar.setValue(bar.value() + pages * max(1, bar.pageStep() - 2))
        return True

    def step_text(self, delta: int) -> None:
        """A+ / A−: larger or smaller text; never below PRESENTATION_MIN_PX (the theme's floor)
        and, while presenting, never past what the view on screen holds (``_keep_view_fitting``)."""
        self.view.step_scale(delta)

    def _check_fit_soon(self) -> None:
        if self.stage is not None:
            self._fit_timer.start()

    def _keep_view_fitting(self) -> None:
        """A view that no longer fits (A+, another view, a smaller screen) gets its text a step
        smaller, down to PRESENTATION_SCALE; each step is measured again once laid out."""
        view = self.view
        if self.stage is None or view.scale <= PRESENTATION_SCALE or self.view_fits():
            return
        view.step_scale(-1)  # the theme change checks again
        self.presenter.acted.emit("text a size smaller: the view must fit the screen")

    def settled(self) -> bool:
        """No fit check is waiting (tests wait for this after A+ or a resize)."""
        return not self._fit_timer.isActive()

    def view_fits(self, name: str | None = None) -> bool:
        """The view's panel is not squeezed below its minimum, and the Jacobians' maps are at
        least MIN_HEATMAP_PX tall (measured after laying out)."""
        if self.stage is None:
            return True
        name = name or self.stage.current
        page = self.stage.page(name)
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        least = page.minimumSizeHint()
        if least.height() > page.height() or least.width() > page.width():
            return False
        if name == "jacobians" and self.jacobians.current_block() is not None:
            return self.heatmap_height() >= MIN_HEATMAP_PX and not self.crowded()
        return True

    def crowded(self) -> list[str]:
        """What the Jacobians view squeezes, in words: maps' titles closer than MIN_TITLE_GAP of
        their height, a control of its toolbar narrower than its text (a cut "✗ 120 fai", a
        note under the check boxes)."""
        j = self.jacobians
        found = [
            f"titles {k + 1} and {k + 2} {gap:.0f} px apart"
            for k, (gap, height) in enumerate(j.plots.title_gaps())
            if gap < MIN_TITLE_GAP * height
        ]
        for control in (j.block_selector, j.worst_button, j.reset_button, j.view_note, j.square_cells, j.log_scale):
            if control.isVisible() and control.width() < control.sizeHint().width():
                found.append(f"{type(control).__name__} {control.width()} of {control.sizeHint().width()} px")
        return found

    def heatmap_height(self) -> float:
        """Height in pixels of the Jacobians' heatmap views."""
        return min(plot.getViewBox().height() for plot in self.jacobians.plot_items)

    @property
    def active(self) -> bool:
        return self._saved is not None

    def _restore_docks(self, state) -> None:
        if self._saved is None:  # not presenting again meanwhile
            self.window.restoreState(state)

    def _stop_waiting_for_size(self) -> None:
        if self._state_after_resize is not None:
            self._state_after_resize = None
            self.window.removeEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In presentation mode a clicker's keys step through the lecture; the arrows only when
        the editor does not have the focus (there they move the cursor). Just after leaving it,
        the window back at its size gets its docks' sizes back."""
        if (
            self._state_after_resize is not None
            and watched is self.window
            and event.type() == QEvent.Type.Resize
            and event.size() == self._state_after_resize[1]
        ):
            state = self._state_after_resize[0]
            self._stop_waiting_for_size()
            QTimer.singleShot(0, lambda: self._restore_docks(state))
        if (
            self._saved is not None
            and event.type() == QEvent.Type.KeyPress
            and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
            and isinstance(watched, QWidget)
            and watched.window() is self.window
        ):
            key = event.key()
            focus = QApplication.focusWidget()
            in_editor = focus is not None and (focus is self.editor or self.editor.isAncestorOf(focus))
            paging = key in (Qt.Key.Key_PageDown, Qt.Key.Key_PageUp)
            if (key in FORWARD_KEYS or key in BACK_KEYS) and (paging or not in_editor):
                if key in FORWARD_KEYS:
                    self.presenter.advance()
                else:
                    self.presenter.retreat()
                return True
        return super().eventFilter(watched, event)


class _Lecture:
    """The window as the presenter sees it (``presenter.PresenterWindow``), through the panels
    and the runner presentation mode was given."""

    def __init__(self, mode: PresentationMode) -> None:
        self.mode, self.jacobians, self.graph, self.document = mode, mode.jacobians, mode.graph, mode.document
        self.runner, self.load_example = mode.runner, mode.load_example

    def current_view(self) -> str:
        return self.mode.current_view()

    def show_view(self, name: str) -> None:
        self.mode.show_view(name)

    def scroll_code(self, pages: int) -> bool:
        return self.mode.scroll_code(pages)

    def examples(self) -> list[str]:
        return [entry.name for entry in builtin_functions()]

    def current_example(self) -> str | None:
        return self.document.builtin_name

    def run(self) -> None:
        self.runner.run()

    def running(self) -> bool:
        return self.runner.controller.busy

    def result_current(self) -> bool:
        return self.runner.controller.shown.is_current()

    def result_failed(self) -> bool:
        block = self.jacobians.current_block()
        return block is not None and not block.passed

    def go_to_worst(self) -> None:
        self.jacobians.go_to_worst(zoom=WORST_NEIGHBOURHOOD)

    def backward_step(self) -> tuple[int, int]:
        return self.graph.step_position()

    def step_backward(self, delta: int) -> None:
        if delta == 0:
            self.graph.start_walk()
        else:
            self.graph.step(delta)
