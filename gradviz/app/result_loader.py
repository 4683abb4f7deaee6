"""Load a result's .npy arrays and prepare its first images off the GUI thread, so a 2000x2000
result never freezes the window. The graph that came with the check travels with it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, QThreadPool, Signal

from gradviz.app.display import PREPARED_PIXELS, prepare_displays
from gradviz.schema.errors import GradvizError
from gradviz.schema.graph import GraphModel
from gradviz.schema.result_files import read_check_result
from gradviz.schema.results import CheckResult


@dataclass(frozen=True)
class LoadedCheck:
    """A check's answer, read and ready to draw."""

    result: CheckResult
    displays: dict = field(default_factory=dict)  # display prep made off the GUI thread (gradviz.app.display)
    graph: GraphModel | None = None  # the checked Function's autograd graph
    graph_error: str | None = None  # why there is no graph


class ResultLoader(QObject):
    loaded = Signal(int, object)  # request id, LoadedCheck
    failed = Signal(int, str)  # request id, message

    def __init__(self, pixels: Callable[[], tuple[float, float]] | None = None, parent: QObject | None = None) -> None:
        """``pixels()``: the size of the heatmap view the first images are prepared for."""
        super().__init__(parent)
        self._pixels = pixels or (lambda: PREPARED_PIXELS)

    def load(self, request: int, summary: dict) -> None:
        """Read the result of the check ``request`` (the worker's ``summary`` names its files and
        carries its graph) and prepare its first images for the heatmap view as it is now."""
        pixels = self._pixels()
        QThreadPool.globalInstance().start(lambda: self._load(request, summary, pixels))

    def _load(self, request: int, summary: dict, pixels: tuple[float, float]) -> None:
        try:
            result = read_check_result(summary)
        except (OSError, ValueError, KeyError, GradvizError) as exc:
            self.failed.emit(request, f"Could not read the result files: {exc}")
            return
        displays = prepare_displays(result, pixels)
        graph, graph_error = read_graph(summary)
        self.loaded.emit(request, LoadedCheck(result, displays, graph, graph_error))


def read_graph(summary: dict) -> tuple[GraphModel | None, str | None]:
    """The worker's graph dict as the one typed model the panels take, read once here; a graph
    that cannot be read costs the graph view only, never the check's result."""
    data = summary.get("graph")
    if not data:
        return None, summary.get("graph_error")
    try:
        return GraphModel.from_dict(data), summary.get("graph_error")
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"The graph could not be read: {exc!r}"
