"""The Why? dock in the main window: after a failing check, the eps sweep of the same code runs in
the background (it never holds a Run back) and the Why? panel draws it for the block on screen.

Its buttons ask for the next run: in float64 (this changes the run bar's dtype, so the user sees
what runs), at the suggested eps or with the inputs moved off a kink (both for this run only: a
suggestion never becomes the eps of the next file or the next launch). "Sweep eps" sweeps the
Function in the editor (or the target the window checks, on its inputs file) whether its check
passed or failed. A model audit's node on screen is swept as that node, at the inputs the model
gave it (``CodeSource.node``); its check is re-run only by auditing again. A sweep made for other code, another file or other settings is marked stale
with the window's own reason (``ShownRun.stale_reason``).
The window owns the settings and the runs; this module only connects the two, from named
collaborators (tests give it fakes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from gradviz.app.code_version import CodeVersion
from gradviz.app.figures import DEFAULT_SIZE, export_figure
from gradviz.app.panels.why_panel import WhyPanel
from gradviz.app.panels.why_plots import legend_in_figure
from gradviz.app.run_controller import RunController
from gradviz.app.runner import Runner
from gradviz.app.state import CurrentResult, RunSettings, RunSnapshot
from gradviz.schema.requests import CheckRequest, SweepRequest
from gradviz.schema.results import BlockComparison, CheckResult
from gradviz.schema.settings import SweepOptions
from gradviz.schema.sweep import SWEEP_FAILED, SweepResult

TITLE = "Why?"
SWEEPING_TEXT = "Sweeping eps for the failing check… (a Run goes first)"
SWEEPING_ASKED_TEXT = "Sweeping eps for this Function… (a Run goes first)"
CHANGED_SINCE = "the code, the file or the settings changed since this sweep. Sweep again to update."
SWEEPING_NODE_TEXT = "Sweeping eps for this node at its inputs in the model… (a Run goes first)"
NODE_RERUNS = (
    "This is a node of a model audit: its check runs with the audit. Change the run bar's settings "
    "and audit the model again."
)


def _blank(code: CodeVersion | str) -> bool:
    return code.is_blank() if isinstance(code, CodeVersion) else not code.strip()


def sweep_of(check: CheckRequest, block: tuple[int, int] | None = None) -> SweepRequest:
    """The eps sweep of the very code, settings and time limit of ``check``; ``block``: sweep
    that (output, input) block cell by cell, else every block that fits."""
    return SweepRequest(code=check.code, settings=check.settings, timeout=check.timeout, options=SweepOptions(block=block))


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
        panel = self.panel
        parts = [{"root": panel.error_plot}, {"root": panel.remainder_plot}]
        with (
            legend_in_figure(panel.error_plot, panel.error_curves),
            legend_in_figure(panel.remainder_plot, panel.remainder_curves),
        ):
            export_figure(path, size=size, caption="\n".join(t for t in (caption, headline) if t), parts=parts)


class BlockPicker(Protocol):
    """What the link uses of the Jacobian panel: the block on screen, and choosing another."""

    block_changed: Any  # Signal

    def current_block(self) -> BlockComparison | None: ...
    def set_block(self, index: int) -> None: ...


class WhyLink(QObject):
    shown = Signal()  # a sweep is on the panel

    def __init__(
        self,
        *,
        runner: Runner,
        controller: RunController,
        current: CurrentResult,
        jacobians: BlockPicker,
        settings: RunSettings,
        add_panel: Callable[[str, QWidget], Any],
        register_figures: Callable[[Any], None],
        say: Callable[[str, int], None],
        parent: QObject | None = None,
    ) -> None:
        """``add_panel(title, widget)`` docks the panel and returns the dock; ``register_figures``
        offers its figure to File → Export; ``say(text, ms)`` shows a line in the status bar."""
        super().__init__(parent)
        self.runner, self.controller, self.current, self.jacobians = runner, controller, current, jacobians
        self.settings, self._say = settings, say
        self.panel = WhyPanel()
        self.dock = add_panel(TITLE, self.panel)
        register_figures(_WhyFigure(self.panel))
        self._request: CheckRequest | None = None  # the check the sweep on screen (or in flight) is of
        self._asked: RunSnapshot | None = None  # what a sweep asked for with the button was made of (ShownRun.now())
        self._asked_in_flight: RunSnapshot | None = None
        self._node: CheckRequest | None = None  # the audit node on screen, when it is one (CurrentResult.node)
        controller.sweep_finished.connect(self._on_sweep_finished)
        controller.sweep_failed.connect(self._on_sweep_failed)
        self.panel.rerun_at_eps.connect(self._on_rerun_at_eps)
        self.panel.use_float64_requested.connect(self._on_use_float64)
        self.panel.redraw_requested.connect(self._on_redraw)
        self.panel.sweep_requested.connect(self._on_sweep_block)
        self.panel.sweep_all_requested.connect(self._on_sweep_all)
        self.panel.block_changed.connect(self._on_panel_block_changed)
        jacobians.block_changed.connect(self._on_block_changed)
        current.changed.connect(self._on_result_changed)
        controller.shown.stale_changed.connect(self.set_stale)

    def _on_result_changed(self) -> None:
        if self.current.result is None:
            return
        if self.current.node is not None:
            self.on_result(self.current.node, self.current.result, node=True)
            return
        self.on_result(self.controller.shown.asked, self.current.result)

    def on_result(self, request: CheckRequest | None, result: CheckResult, *, node: bool = False) -> None:
        """A check's result is on screen: a failing one gets its sweep, a passing one none.
        ``node``: ``request`` is an audit node's; it is swept as that node, never re-run here."""
        self._request = None
        self._asked = self._asked_in_flight = None
        self._node = request if node else None
        self.panel.set_reruns_allowed(not node, NODE_RERUNS if node else "")
        if result.sweep is not None:
            self.panel.set_result(result.sweep, result.precision)
            self._on_block_changed()
            self._update()
            self.shown.emit()
            return
        self.panel.set_result(None)
        if not (result.passed or request is None):
            self._request = request
            self.panel.show_message(SWEEPING_NODE_TEXT if node else SWEEPING_TEXT)
            self.controller.run_sweep(sweep_of(request))
        self._update()

    def set_stale(self, reason: str | None) -> None:
        """The window's reason why the result on screen is stale (None: it is current)."""
        self._update(reason)

    def _update(self, reason: str | None = None) -> None:
        """The stale mark and the Sweep button, after any change of code, file, settings or runs."""
        shown = self.controller.shown
        now = shown.now()
        if self._node is not None:  # of the audited model, not of the editor: never stale by an edit
            self.panel.set_stale(None)
            allowed = not self.sweep_in_flight()
            self.panel.set_sweep_allowed(allowed, "" if allowed else "Sweeping…")
            return
        if self._asked is not None:  # swept with the button: stale when what it swept changed
            reason = None if self._asked == now else (reason or CHANGED_SINCE[:1].upper() + CHANGED_SINCE[1:])
        else:
            reason = shown.stale_reason() if reason is None else reason
        self.panel.set_stale(reason)
        if self.sweep_in_flight():
            self.panel.set_sweep_allowed(False, "Sweeping…")
        else:
            self.panel.set_sweep_allowed(bool(now and not _blank(now.code)))

    def sweep_in_flight(self) -> bool:
        return self._request is not None and self.controller.sweep_pending

    def _on_sweep_all(self) -> None:
        """Sweep the Function in the editor (or the target) with the run bar's settings, passing or
        failing; the node on screen, when it is an audit's."""
        if self._node is not None:
            self._request = self._node
            self.panel.show_message(SWEEPING_NODE_TEXT)
            self.controller.run_sweep(sweep_of(self._node))
            self._update()
            return
        self._request = self.runner.build_request()
        self._asked_in_flight = self.controller.shown.now(keep=True)
        self.panel.show_message(SWEEPING_ASKED_TEXT)
        self.controller.run_sweep(sweep_of(self._request))
        self._update()

    def _on_sweep_finished(self, payload: dict) -> None:
        result = self.current.result
        if self._request is None or (result is None and self._asked_in_flight is None):
            return
        self._request = None
        self._asked, self._asked_in_flight = self._asked_in_flight, None
        self.panel.set_result(SweepResult.from_dict(payload["sweep"]), result.precision if result else None)
        self._on_block_changed()
        self._update()
        self.shown.emit()

    def _on_sweep_failed(self, message: str) -> None:
        if self._request is not None:
            self._request = self._asked = self._asked_in_flight = None
            self.panel.set_result(None)
            self.panel.show_message(SWEEP_FAILED.format(why=message))
            self._update()

    def _on_block_changed(self, *_args) -> None:
        block = self.jacobians.current_block()
        if block is not None and self.panel.result() is not None:
            self.panel.select_block(block.output, block.input)

    def _on_panel_block_changed(self, output: int, input: int) -> None:
        """A block picked in the Why? panel shows in the heatmaps too."""
        result = self.current.result
        blocks = result.blocks if result is not None else []
        index = next((k for k, b in enumerate(blocks) if (b.output, b.input) == (output, input)), None)
        if index is not None:
            self.jacobians.set_block(index)

    def _on_rerun_at_eps(self, eps: float) -> None:
        """This run only: the run bar keeps its eps, so the next file (and launch) is not affected."""
        request = self.runner.build_request()
        self.runner.run_check(replace(request, settings=replace(request.settings, eps=eps)))
        self._say(
            f"Re-running at eps={eps:g} for this run only; the run bar keeps eps={request.settings.eps:g}.", 8000
        )

    def _on_use_float64(self) -> None:
        self.settings.dtype = "float64"
        self.runner.run()

    def _on_redraw(self, jitter: float) -> None:
        """This run only: the inputs moved off the kink by up to jitter·(1+|x|)."""
        request = self.runner.build_request()
        self.runner.run_check(replace(request, settings=replace(request.settings, jitter=jitter)))

    def _on_sweep_block(self, block: tuple[int, int]) -> None:
        if self._request is not None or self.current.result is not None:
            request = self._request or self._node or self.runner.build_request()
            self._request = request
            self.panel.show_message(SWEEPING_NODE_TEXT if request is self._node else SWEEPING_TEXT)
            self.controller.run_sweep(sweep_of(request, (block[0], block[1])))
            self._update()
