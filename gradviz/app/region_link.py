"""Regions of a block too large to hold, computed on demand: the Jacobian panel asks, the run
controller sends the request with the very code and settings of the check on screen (so the
worker rebuilds the same inputs), and the answer goes back to the panel.

Regions belong to one result: a new Run, another file or an edit of the code discards them. The
window owns the runs; this module only connects the panel with the controller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from gradviz.schema.result_files import read_region

if TYPE_CHECKING:
    from gradviz.app.main_window import MainWindow


class RegionLink(QObject):
    shown = Signal()  # a region is on the panel (tests and screenshots wait on it)
    failed = Signal(str)  # why a region did not come

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        panel, controller = window.jacobians, window.controller
        panel.region_requested.connect(self._on_region_requested)
        panel.region_cancelled.connect(controller.cancel_region)
        controller.region_started.connect(lambda _request: panel.set_region_started())
        controller.region_progress.connect(panel.set_region_progress)
        controller.region_finished.connect(self._on_region_finished)
        controller.region_failed.connect(self._on_region_failed)
        controller.check_started.connect(self._on_source_changed)
        window.editor.text_edited.connect(self._on_source_changed)
        window.document.path_changed.connect(self._on_source_changed)

    def _on_region_requested(self, region: dict) -> None:
        request = self.window.shown_run.sent_request
        if request is None or self.window.current.result is None:
            self._on_region_failed(0, {"message": "Run a check first: a region belongs to a check's result."})
            return
        self.window.controller.run_region(request, region)

    def _on_region_finished(self, _request: int, summary: dict) -> None:
        try:
            region = read_region(summary)
        except (OSError, ValueError, KeyError) as exc:
            self._on_region_failed(0, {"message": f"Could not read the region's cells: {exc}"})
            return
        self.window.jacobians.add_region(region)
        QTimer.singleShot(0, self.shown.emit)

    def _on_region_failed(self, _request: int, error: dict) -> None:
        message = error.get("message") or "The region could not be computed."
        self.window.jacobians.region_failed(message)
        self.failed.emit(message)

    def _on_source_changed(self, *_args) -> None:
        """The code the regions were computed from is no longer what the editor holds: drop them."""
        self.window.controller.cancel_region()
        self.window.jacobians.clear_regions()
