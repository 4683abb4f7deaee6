"""The Why? dock in the main window: after a failing check, the eps sweep of the same code runs in
the background (it never holds a Run back) and the Why? panel draws it for the block on screen.

Its buttons ask for the next run: at the suggested eps, in float64 (both change the run bar's
settings, so the user sees what runs), or with the inputs moved off a kink (this run only). The
window owns the settings and the runs; this module only connects the two.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from gradviz.app.figures import DEFAULT_SIZE, export_figure
from gradviz.app.panels.why_panel import WhyPanel
from gradviz.app.run_controller import CheckRequest
from gradviz.schema.results import CheckResult
from gradviz.schema.sweep import SweepResult

if TYPE_CHECKING:
    from gradviz.app.main_window import MainWindow

TITLE = "Why?"
SWEEPING_TEXT = "Sweeping eps for the failing check… (a Run goes first)"


class _WhyFigure:
    """The sweep's two plots side by side, as File → Export draws a figure."""

    def __init__(self, panel: WhyPanel) -> None:
        self.panel = panel

    def figures(self) -> dict[str, dict]:
        return {"why": {}}

    def has_figure(self) -> bool:
        return self.panel.result() is not None

    def export(self, name: str, path: str, *, size=DEFAULT_SIZE, caption: str = "") -> None:
        headline = self.panel.headline_text()
        parts = [{"root": self.panel.error_plot}, {"root": self.panel.remainder_plot}]
        export_figure(path, size=size, caption="\n".join(t for t in (caption, headline) if t), parts=parts)


class WhyLink(QObject):
    shown = Signal()  # a sweep is on the panel

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.panel = WhyPanel()
        self.dock = window.add_panel(TITLE, self.panel)
        window.exports.register_figures(_WhyFigure(self.panel))
        self._request: CheckRequest | None = None  # the check the sweep on screen (or in flight) is of
        controller = window.controller
        controller.sweep_finished.connect(self._on_sweep_finished)
        controller.sweep_failed.connect(self._on_sweep_failed)
        self.panel.rerun_at_eps.connect(self._on_rerun_at_eps)
        self.panel.use_float64_requested.connect(self._on_use_float64)
        self.panel.redraw_requested.connect(self._on_redraw)
        self.panel.sweep_requested.connect(self._on_sweep_block)
        self.panel.block_changed.connect(self._on_panel_block_changed)
        window.jacobians.block_changed.connect(self._on_block_changed)

    def on_result(self, request: CheckRequest | None, result: CheckResult) -> None:
        """A check's result is on screen: a failing one gets its sweep, a passing one none."""
        self._request = None
        if result.sweep is not None:
            self.panel.set_result(result.sweep, result.precision)
            self._on_block_changed()
            self.shown.emit()
            return
        self.panel.set_result(None)
        if result.passed or request is None or request.target:
            return
        self._request = request
        self.panel.message.setText(SWEEPING_TEXT)
        self.window.controller.run_sweep(request)

    def _on_sweep_finished(self, payload: dict) -> None:
        result = self.window.current.result
        if self._request is None or result is None:
            return
        self.panel.set_result(SweepResult.from_dict(payload["sweep"]), result.precision)
        self._on_block_changed()
        self.shown.emit()

    def _on_sweep_failed(self, message: str) -> None:
        if self._request is not None:
            self.panel.set_result(None)
            self.panel.message.setText(f"The eps sweep could not run: {message}")

    def _on_block_changed(self, *_args) -> None:
        block = self.window.jacobians.current_block()
        if block is not None and self.panel.result() is not None:
            self.panel.select_block(block.output, block.input)

    def _on_panel_block_changed(self, output: int, input: int) -> None:
        """A block picked in the Why? panel shows in the heatmaps too."""
        result = self.window.current.result
        blocks = result.blocks if result is not None else []
        index = next((k for k, b in enumerate(blocks) if (b.output, b.input) == (output, input)), None)
        if index is not None:
            self.window.jacobians.set_block(index)

    def _on_rerun_at_eps(self, eps: float) -> None:
        self.window.run_settings.eps = eps
        self.window.request_run()

    def _on_use_float64(self) -> None:
        self.window.run_settings.dtype = "float64"
        self.window.request_run()

    def _on_redraw(self, jitter: float) -> None:
        """This run only: the inputs moved off the kink by up to jitter·(1+|x|)."""
        request = self.window.check_request()
        self.window.run_request(replace(request, settings=replace(request.settings, jitter=jitter)))

    def _on_sweep_block(self, block: tuple[int, int]) -> None:
        if self._request is not None or self.window.current.result is not None:
            request = self._request or self.window.check_request()
            self._request = request
            self.panel.message.setText(SWEEPING_TEXT)
            self.window.controller.run_sweep(request, {"block": list(block)})
