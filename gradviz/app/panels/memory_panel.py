"""The memory panel: what Conv2d + BatchNorm2d saves for backward against the fused Function.

A composition of its controls (``memory_controls``), its two figures (``memory_plots``), the saved
tensors and peaks (``memory_tensors``) and the texts; it arranges them for the room it gets.

The worker's "memory" request measures; this panel only draws the answer: two bars (the fused
one stacked with the bytes its Function keeps as ``ctx`` attributes), a headline with the saving
and whether it matches the formula, the sweep over layers and batch sizes, and on CUDA the peak
and end-of-forward memory. Its display prep (one byte unit, the texts, the sweep's curves) comes from
``gradviz.app.memory_display``; its controls show a ``MemorySettings`` state (the defaults are
``schema.settings.MemoryOptions``').

The panel lays itself out for the room it gets: in a tall, narrow dock everything is stacked;
in a wide, short one (the tabs below the Jacobians) the controls and texts sit left of the plots
and the two plots side by side. While a measurement runs, Measure is disabled and a bar shows
how far it is.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QBoxLayout,
    QLabel,
    QStackedWidget,
    QTabWidget,
    QWidget,
)

from gradviz.app.figures import DEFAULT_SIZE, export_figure, slide_size
from gradviz.app.memory_display import (
    FAIL_COLOUR,
    VARIANTS,
    MemoryResult,
    bar_top,
    checks_html,
    headline,
)
from gradviz.app.panels.box_layout import Stretch, column, fill
from gradviz.app.panels.memory_controls import MeasureProgress, MemoryControls
from gradviz.app.panels.memory_plots import MemoryPlots
from gradviz.app.panels.memory_tensors import PeakTable, SavedTensorsView
from gradviz.app.state import MemorySettings
from gradviz.app.theme import ViewSettings
from gradviz.schema.memory import ConvBNStudy
from gradviz.schema.units import UNITS, choose_unit

TENSORS_TAB = "Saved tensors"
CONTROL_NAMES = (
    "layers_spin", "batch_spin", "channels_spin", "height_spin", "width_spin", "shape_spins", "out_channels_spin",
    "kernel_spin", "count_spins", "dtype_combo", "device_combo", "measure_button",
)  # fmt: skip
EMPTY_TEXT = "No measurement yet: pick a stack and press Measure."
CPU_NOTE = "CUDA peak memory is measured when the device is CUDA."
WIDE_RATIO = 1.5  # wider than this times its height: controls left of the plots, plots side by side
INFO_WIDTH = 330  # px of the controls' column in the wide arrangement, at scale 1
PLOT_NAMES = (
    "bar_plot", "bar_item", "bar_items", "bar_texts", "bar_legend", "sweep_plot", "sweep_item", "sweep_legend",
    "sweep_curves", "measured_line", "measured_points", "figures_layout",
)  # fmt: skip


class MemoryPanel(QWidget):
    """Bars, headline and sweep for one memory measurement; controls that ask for the next one."""

    measure_requested = Signal(dict)  # options for the worker's "memory" request

    def __init__(
        self, options: MemorySettings | None = None, parent: QWidget | None = None, *, view: ViewSettings | None = None
    ) -> None:
        super().__init__(parent)
        self.state = options if options is not None else MemorySettings(parent=self)
        self.view = view if view is not None else ViewSettings(self)
        self._payload: MemoryResult | None = None
        self._unit: tuple[str, int] = UNITS[0]
        self._devices: list[str] = ["cpu"]
        self._wide: tuple[bool, bool, int] | None = None  # (texts left of the plots, plots side by side, texts' width)
        self.controls = MemoryControls(self.state)
        for name in CONTROL_NAMES:  # the controls as the panel's own attributes, as before the split
            setattr(self, name, getattr(self.controls, name))
        self.measuring = MeasureProgress(self.view)
        self.progress, self.status = self.measuring.progress, self.measuring.status
        self._build_results()
        self.set_devices(["cpu"])

        self.info = QWidget()
        texts = (self.controls, self.measuring, self.headline, self.checks_label, self.cpu_note, self.peak_box)
        column(*texts, Stretch(1), parent=self.info)
        self.body = QBoxLayout(QBoxLayout.Direction.TopToBottom, self)
        self.body.setContentsMargins(6, 4, 6, 4)
        fill(self.body, self.info, (self.stack, 1))
        self.measure_button.clicked.connect(self._on_measure_clicked)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()
        self._arrange()
        self.set_result(None)

    # building ---------------------------------------------------------------------------------

    def _build_results(self) -> None:
        self.headline = QLabel()
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.checks_label = QLabel()
        self.checks_label.setTextFormat(Qt.TextFormat.RichText)
        self.checks_label.setWordWrap(True)
        self.checks_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.plots_area = self.plots = MemoryPlots(self.view)
        for name in PLOT_NAMES:  # the plots' parts as the panel's own attributes, as before the split
            setattr(self, name, getattr(self.plots, name))

        self.cpu_note = QLabel(CPU_NOTE)
        self.cpu_note.setWordWrap(True)
        self.peak_box = PeakTable(self.view)  # beside the texts, on CUDA results only
        self.peak_table, self.peak_title = self.peak_box.table, self.peak_box.title

        self.message = QLabel()
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        # the plots, and beside them in a tab the saved tensors that explain the bars
        self.tensors = SavedTensorsView(self.view)
        self.views = QTabWidget()
        self.views.setDocumentMode(True)
        self.views.addTab(self.plots_area, "Plots")
        self.views.addTab(self.tensors, TENSORS_TAB)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.views)
        self.stack.addWidget(self.message)

    # public API -------------------------------------------------------------------------------

    def options(self) -> dict:
        """The options the controls show, as the worker's "memory" request takes them."""
        return self.state.to_dict()

    def set_devices(self, names: list[str]) -> None:
        """Offer these devices, keeping the current one if it is still there."""
        self._devices = list(names)
        self.controls.set_devices(names)
        self._show_cpu_note()

    def set_result(self, payload: MemoryResult | None) -> None:
        """Draw a memory measurement (``memory_display.read_memory`` reads the worker's dict into
        one); None clears the panel."""
        self._payload = payload
        if payload is None:
            self._clear()
            self._show_message(EMPTY_TEXT, error=False)
            return
        study = payload.study
        self._unit = choose_unit(bar_top(study))
        self.plots.draw(study, payload.sweep, self._unit)
        self._draw_headline(study)
        self._draw_peaks(study)
        self.tensors.set_study(study, self._unit)
        counts = " vs ".join(str(study.variants[name].count) for name in VARIANTS)
        self.views.setTabText(self.views.indexOf(self.tensors), f"{TENSORS_TAB} ({counts})")
        self.stack.setCurrentWidget(self.views)

    def set_error(self, message: str) -> None:
        """Show why the measurement failed, in place of the plots."""
        self.set_measuring(False)
        self._payload = None
        self._clear()
        self._show_message(message, error=True)

    def set_measuring(self, measuring: bool, text: str = "") -> None:
        """A measurement runs (Measure disabled, a progress bar) or not; ``text`` says what waits."""
        self.measure_button.setEnabled(not measuring)
        self.measuring.set_measuring(measuring, text)

    def set_progress(self, done: int, total: int) -> None:
        """Stacks measured so far (the study, then each row of the sweep)."""
        self.measuring.set_progress(done, total)

    def is_measuring(self) -> bool:
        return self.measuring.is_measuring()

    def result(self) -> MemoryResult | None:
        """The measurement on screen, or None."""
        return self._payload

    def unit(self) -> tuple[str, int]:
        """(name, bytes) of the unit both plots' y axes are in."""
        return self._unit

    def headline_text(self) -> str:
        """The headline and the checks line as plain text."""
        checks = QTextDocument()
        checks.setHtml(self.checks_label.text())
        return f"{self.headline.text()}\n{checks.toPlainText()}"

    def message_text(self) -> str:
        """The text shown in place of the plots ('' while the plots show)."""
        return self.message.text() if self.stack.currentWidget() is self.message else ""

    def figures(self) -> dict[str, dict]:
        return self.plots.figures()

    def export(self, name: str, path: str, *, size=DEFAULT_SIZE, caption: str = "") -> None:
        """One figure ('memory_bars', 'memory_sweep' or both side by side, 'memory') as PNG, SVG or PDF."""
        if self._payload is None:
            raise OSError("There is no memory measurement to export yet: press Measure first.")
        caption = caption or self.headline_text()
        export_figure(path, size=size, caption=caption, **self.figures()[name])
        self.plots.fit_bar_range()

    def export_png(self, path: str) -> None:
        """The bars and the sweep side by side with the headline under them, slide-sized."""
        self.export("memory", path, size=slide_size(0.5))

    # drawing ----------------------------------------------------------------------------------

    def _draw_headline(self, study: ConvBNStudy) -> None:
        self.headline.setText(headline(study, self._unit))
        self.checks_label.setText(checks_html(study))

    def _draw_peaks(self, study: ConvBNStudy) -> None:
        self.peak_box.set_study(study)
        self._show_cpu_note()

    def _show_cpu_note(self) -> None:
        """Where peaks come from, after a CPU measurement on a machine that has CUDA to offer."""
        cuda_result = self._payload is not None and all(v.on_cuda for v in self._payload.study.variants.values())
        has_cuda = any(name.startswith("cuda") for name in self._devices)
        self.cpu_note.setVisible(self._payload is not None and has_cuda and not cuda_result)

    def _clear(self) -> None:
        self.plots.clear()
        self.tensors.set_study(None, UNITS[0])
        self.views.setTabText(self.views.indexOf(self.tensors), TENSORS_TAB)
        self.headline.setText("")
        self.checks_label.setText("")
        self.peak_box.set_study(None)
        self.cpu_note.hide()
        self._unit = UNITS[0]

    def _show_message(self, text: str, *, error: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {FAIL_COLOUR if error else self.view.theme.muted}")
        self.stack.setCurrentWidget(self.message)

    # layout and theme -----------------------------------------------------------------------------

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()

    def _info_width(self) -> int:
        """The texts' column in the wide arrangement: INFO_WIDTH at the scale, or what the
        controls need where the presentation floor makes their texts larger still."""
        return max(round(INFO_WIDTH * self.view.theme.scale), self.controls.minimumSizeHint().width())

    def _arrange(self) -> None:
        """Stacked in a tall dock; texts left of the plots, plots side by side, in a wide one;
        wider than tall but short of that (presentation's 1280x720), the plots side by side
        under the texts, so the sweep is not below the fold."""
        info = self._info_width()
        wide = self.width() > WIDE_RATIO * self.height() and self.width() >= info + self.plots.minimum_plots_width() + 40
        beside = wide or (self.width() > self.height() and self.width() >= self.plots.minimum_plots_width() + 40)
        arrangement = (wide, beside, info if wide else 0)
        if arrangement == self._wide:
            return
        self._wide = arrangement
        horizontal, vertical = QBoxLayout.Direction.LeftToRight, QBoxLayout.Direction.TopToBottom
        self.body.setDirection(horizontal if wide else vertical)
        self.plots.set_side_by_side(beside)
        if wide:
            self.info.setFixedWidth(info)
        else:
            self.info.setMinimumWidth(0)
            self.info.setMaximumWidth(16_777_215)

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.setFont(theme.font(QApplication.font().pointSizeF()))
        self.measure_button.setFont(theme.font(QApplication.font().pointSizeF(), bold=True))
        self.headline.setFont(theme.font(15, bold=True))
        self.checks_label.setFont(theme.font(12))
        self.cpu_note.setFont(theme.font(11))
        self.cpu_note.setStyleSheet(f"color: {theme.muted}; font-style: italic")
        self.message.setFont(theme.font(15))
        self.plots.apply_theme()
        self._arrange()  # the texts' width follows the text size
        if self._payload is not None:
            self.set_result(self._payload)

    def _on_measure_clicked(self) -> None:
        self.measure_requested.emit(self.options())
