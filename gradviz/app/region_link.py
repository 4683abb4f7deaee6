"""Regions of a block too large to hold, computed on demand: the Jacobian panel asks, the run
controller sends the request with the very code and settings of the check on screen (so the
worker rebuilds the same inputs), and the answer goes back to the panel.

Regions belong to one result: a new Run, another file or an edit of the code discards them. The
window owns the runs; this module only connects the panel with the controller (tests give it a
fake panel and a controller over a fake worker).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from gradviz.app.run_controller import RunController
from gradviz.app.state import CurrentResult
from gradviz.schema.requests import Region, RegionRequest
from gradviz.schema.result_files import read_region


class RegionPanel(Protocol):
    """What the link uses of the Jacobian panel's large-block page."""

    region_requested: Any  # Signal(Region): the cells of a block to compute
    region_cancelled: Any  # Signal()

    def set_region_started(self) -> None: ...
    def set_region_progress(self, done: int, total: int) -> None: ...
    def add_region(self, region: Any) -> None: ...
    def region_failed(self, message: str) -> None: ...
    def clear_regions(self) -> None: ...


class RegionLink(QObject):
    shown = Signal()  # a region is on the panel (tests and screenshots wait on it)
    failed = Signal(str)  # why a region did not come

    def __init__(
        self,
        panel: RegionPanel,
        controller: RunController,
        current: CurrentResult,
        source_changes: Iterable[Any] = (),
        parent: QObject | None = None,
    ) -> None:
        """``source_changes``: signals that say the code the regions came from is gone (an edit,
        another file); a new check says so too."""
        super().__init__(parent)
        self.panel, self.controller, self.current = panel, controller, current
        panel.region_requested.connect(self._on_region_requested)
        panel.region_cancelled.connect(controller.cancel_region)
        controller.region_started.connect(lambda _request: panel.set_region_started())
        controller.region_progress.connect(panel.set_region_progress)
        controller.region_finished.connect(self._on_region_finished)
        controller.region_failed.connect(self._on_region_failed)
        controller.check_started.connect(self._on_source_changed)
        for signal in source_changes:
            signal.connect(self._on_source_changed)

    def _on_region_requested(self, region: Region) -> None:
        request = self.current.node or self.controller.shown.sent_request  # an audit node's regions are of that node
        if request is None or self.current.result is None:
            self._on_region_failed(0, {"message": "Run a check first: a region belongs to a check's result."})
            return
        self.controller.run_region(
            RegionRequest(code=request.code, region=region, settings=request.settings, timeout=request.timeout)
        )

    def _on_region_finished(self, _request: int, summary: dict) -> None:
        try:
            region = read_region(summary)
        except (OSError, ValueError, KeyError) as exc:
            self._on_region_failed(0, {"message": f"Could not read the region's cells: {exc}"})
            return
        self.panel.add_region(region)
        QTimer.singleShot(0, self.shown.emit)

    def _on_region_failed(self, _request: int, error: dict) -> None:
        message = error.get("message") or "The region could not be computed."
        self.panel.region_failed(message)
        self.failed.emit(message)

    def _on_source_changed(self, *_args) -> None:
        """The code the regions were computed from is no longer what the editor holds: drop them."""
        self.controller.cancel_region()
        self.panel.clear_regions()
