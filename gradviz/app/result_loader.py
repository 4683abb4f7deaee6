"""Load a result's .npy arrays and prepare its first images off the GUI thread, so a 2000x2000
result never freezes the window."""

from __future__ import annotations

from PySide6.QtCore import QObject, QThreadPool, Signal

from gradviz.app.display import PREPARED_PIXELS, prepare_displays
from gradviz.schema.errors import GradvizError
from gradviz.schema.result_files import read_check_result


class ResultLoader(QObject):
    loaded = Signal(int, object, object)  # request id, CheckResult, prepared displays
    failed = Signal(int, str)  # request id, message

    def load(self, request: int, summary: dict, pixels: tuple[float, float] = PREPARED_PIXELS) -> None:
        """Read the result and prepare its first images for a heatmap view of ``pixels``."""
        QThreadPool.globalInstance().start(lambda: self._load(request, summary, pixels))

    def _load(self, request: int, summary: dict, pixels: tuple[float, float]) -> None:
        try:
            result = read_check_result(summary)
        except (OSError, ValueError, KeyError, GradvizError) as exc:
            self.failed.emit(request, f"Could not read the result files: {exc}")
            return
        self.loaded.emit(request, result, prepare_displays(result, pixels))
