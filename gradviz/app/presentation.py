"""Presentation mode (F11): full screen, the controls hidden, one larger text scale and the
high-contrast theme; a clicker's keys (Page Down/Up, the arrows, Space) step through a lecture
with the ``Presenter``. Leaving it puts the window, its docks and its text back as they were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QWidget

from gradviz.app import window_layout
from gradviz.app.presenter import Presenter
from gradviz.app.theme import PRESENTATION_SCALE
from gradviz.schema.library import builtin_functions

if TYPE_CHECKING:
    from gradviz.app.main_window import MainWindow

FORWARD_KEYS = (Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_Space)
BACK_KEYS = (Qt.Key.Key_PageUp, Qt.Key.Key_Left, Qt.Key.Key_Up)
# the Why? dock too: beside the heatmaps it would squeeze them on a 1280x720 projector
PRESENTATION_HIDES = ("Functions", "Output", window_layout.MEMORY_DOCK, "Why?")


class PresentationMode(QObject):
    """What presentation mode changed in ``window``, to put back, and the clicker's keys."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self._saved: dict | None = None
        self.presenter = Presenter(_PresenterAdapter(window), self)

    def toggle(self) -> None:
        self.set(self._saved is None)

    def set(self, on: bool) -> None:
        """Full screen, controls hidden, large high-contrast text; off puts everything back."""
        w = self.w
        if on == (self._saved is not None):
            return
        if on:
            self._saved = {
                "state": w.saveState(),
                "maximized": w.isMaximized(),
                "full_screen": w.isFullScreen(),
                "geometry": w.saveGeometry(),
                "scale": w.view.scale,
                "contrast": w.view.high_contrast,
                "auto": w.layout_manager.auto,
            }
            w.layout_manager.presenting = True  # the docks stay where they are, sized for the room
            w.menuBar().hide()
            w.statusBar().hide()
            w.run_bar.hide()
            w.present_bar.show()
            for title in PRESENTATION_HIDES:
                w.docks[title].hide()
            w.view.scale = max(w.view.scale, PRESENTATION_SCALE)
            w.view.high_contrast = True
            w.banner.set_compact(True)
            w.showFullScreen()
            w.jacobians.setFocus()  # the clicker's arrows step, not the editor's cursor
        else:
            saved, self._saved = self._saved, None
            w.present_bar.hide()
            w.menuBar().show()
            w.statusBar().show()
            w.run_bar.show()
            w.view.scale = saved["scale"]
            w.view.high_contrast = saved["contrast"]
            w.banner.set_compact(False)
            if saved["full_screen"]:
                w.showFullScreen()
            elif saved["maximized"]:
                w.showMaximized()
            else:
                w.showNormal()
                w.restoreGeometry(saved["geometry"])
            w.layout_manager.presenting = False
            w.restoreState(saved["state"])
            w.layout_manager.auto = saved["auto"]
        w.actions["presentation"].setChecked(on)

    @property
    def active(self) -> bool:
        return self._saved is not None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In presentation mode a clicker's keys step through the lecture; the arrows only when
        the editor does not have the focus (there they move the cursor)."""
        if (
            self._saved is not None
            and event.type() == QEvent.Type.KeyPress
            and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
            and isinstance(watched, QWidget)
            and watched.window() is self.w
        ):
            key = event.key()
            focus = QApplication.focusWidget()
            in_editor = focus is not None and (focus is self.w.editor or self.w.editor.isAncestorOf(focus))
            paging = key in (Qt.Key.Key_PageDown, Qt.Key.Key_PageUp)
            if (key in FORWARD_KEYS or key in BACK_KEYS) and (paging or not in_editor):
                if key in FORWARD_KEYS:
                    self.presenter.advance()
                else:
                    self.presenter.retreat()
                return True
        return super().eventFilter(watched, event)


class _PresenterAdapter:
    """The window as the presenter sees it (``presenter.PresenterWindow``)."""

    def __init__(self, window: MainWindow) -> None:
        self.w = window

    def examples(self) -> list[str]:
        return [entry.name for entry in builtin_functions()]

    def current_example(self) -> str | None:
        return self.w.document.builtin_name

    def load_example(self, name: str) -> None:
        self.w.load_builtin(name)

    def run(self) -> None:
        self.w.request_run()

    def running(self) -> bool:
        return self.w.controller.busy

    def result_current(self) -> bool:
        return self.w.current.result is not None and self.w._shown is not None and self.w.stale_reason() is None

    def result_failed(self) -> bool:
        block = self.w.jacobians.current_block()
        return block is not None and not block.passed

    def go_to_worst(self) -> None:
        self.w.jacobians.go_to_worst()

    def backward_step(self) -> tuple[int, int]:
        return self.w.graph.step_position()

    def step_backward(self, delta: int) -> None:
        graph = self.w.graph
        if delta == 0:
            graph.start_walk()
        else:
            graph.step(delta)
