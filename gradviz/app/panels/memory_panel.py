"""The memory panel: what Conv2d + BatchNorm2d saves for backward against the fused Function.

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

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSizeF, Qt, Signal
from PySide6.QtGui import QFontMetricsF, QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QBoxLayout,
    QLabel,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.figures import DEFAULT_SIZE, export_figure, slide_size
from gradviz.app.memory_display import (
    FAIL_COLOUR,
    VARIANTS,
    bar_top,
    checks_html,
    choose_unit,
    format_in,
    headline,
    measured_points,
    sweep_curves,
)
from gradviz.app.panels.box_layout import Stretch, column, fill
from gradviz.app.panels.memory_controls import MeasureProgress, MemoryControls
from gradviz.app.panels.memory_tensors import PeakTable, SavedTensorsView
from gradviz.app.plot_style import plain_ticks, set_axis_label, style_axis
from gradviz.app.state import MemorySettings
from gradviz.app.theme import ViewSettings
from gradviz.schema.units import UNITS, format_bytes

BAR_LABELS = {"unfused": "unfused\nconv + BN", "fused": "fused\nFunction"}
UNFUSED_COLOUR = "#4c72b0"
FUSED_COLOUR = "#dd8452"
CTX_COLOUR = "#f5c9a4"  # the fused colour, lighter: bytes kept beside save_for_backward
BATCH_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
TENSORS_TAB = "Saved tensors"
CONTROL_NAMES = (
    "layers_spin", "batch_spin", "channels_spin", "height_spin", "width_spin", "shape_spins", "out_channels_spin",
    "kernel_spin", "count_spins", "dtype_combo", "device_combo", "measure_button",
)  # fmt: skip
EMPTY_TEXT = "No measurement yet: pick a stack and press Measure."
CPU_NOTE = "CUDA peak memory is measured when the device is CUDA."
BAR_WIDTH = 0.6
WIDE_RATIO = 1.5  # wider than this times its height: controls left of the plots, plots side by side
INFO_WIDTH = 330  # px of the controls' column in the wide arrangement, at scale 1


def _style_plot(plot: pg.PlotItem) -> None:
    """Ticks a reader can count, no mouse, no SI factor (the unit is in the label)."""
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plain_ticks(plot.getAxis("left"))
    plot.getAxis("left").setStyle(maxTickLevel=0)  # major ticks only: grid lines a reader can count
    plot.setMouseEnabled(x=False, y=False)
    plot.showGrid(y=True, alpha=0.2)


class MemoryPanel(QWidget):
    """Bars, headline and sweep for one memory measurement; controls that ask for the next one."""

    measure_requested = Signal(dict)  # options for the worker's "memory" request

    def __init__(
        self, options: MemorySettings | None = None, parent: QWidget | None = None, *, view: ViewSettings | None = None
    ) -> None:
        super().__init__(parent)
        self.state = options if options is not None else MemorySettings(parent=self)
        self.view = view if view is not None else ViewSettings(self)
        self._payload: dict[str, Any] | None = None
        self._unit: tuple[str, int] = UNITS[0]
        self._devices: list[str] = ["cpu"]
        self._wide: bool | None = None
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

        # the bars and, below them off the bars, their legend: one scene, one figure
        self.bar_plot = pg.GraphicsLayoutWidget()
        self.bar_plot.setBackground("w")
        self.bar_item = bars = self.bar_plot.addPlot(row=0, col=0)
        _style_plot(bars)
        bars.getAxis("bottom").setTicks([[(k, BAR_LABELS[v]) for k, v in enumerate(VARIANTS)]])
        bars.getAxis("bottom").setGrid(False)
        bars.getAxis("bottom").setStyle(hideOverlappingLabels=False)  # the x range makes room for them
        bars.setXRange(-0.6, 1.6, padding=0)
        self.bar_items = {
            "unfused": pg.BarGraphItem(x=[0], height=[0], width=BAR_WIDTH, brush=UNFUSED_COLOUR, pen=pg.mkPen("#222")),
            "fused": pg.BarGraphItem(x=[1], height=[0], width=BAR_WIDTH, brush=FUSED_COLOUR, pen=pg.mkPen("#222")),
            "fused_ctx": pg.BarGraphItem(
                x=[1], y0=[0], height=[0], width=BAR_WIDTH, brush=CTX_COLOUR, pen=pg.mkPen("#222")
            ),
        }
        for item in self.bar_items.values():
            bars.addItem(item)
        self.bar_legend = pg.LegendItem(frame=False)
        self.bar_legend.addItem(self.bar_items["fused_ctx"], "kept as ctx attributes")
        self.bar_plot.addItem(self.bar_legend, row=1, col=0)
        self.bar_plot.ci.layout.setAlignment(self.bar_legend, Qt.AlignmentFlag.AlignHCenter)
        self.bar_texts = {name: pg.TextItem(anchor=(0.5, 1.0)) for name in VARIANTS}  # figures above each bar
        for text in self.bar_texts.values():
            bars.addItem(text)
        self.bar_plot.setMinimumSize(200, 170)
        bars.getViewBox().sigResized.connect(self._fit_bar_range)

        self.cpu_note = QLabel(CPU_NOTE)
        self.cpu_note.setWordWrap(True)
        self.peak_box = PeakTable(self.view)  # beside the texts, on CUDA results only
        self.peak_table, self.peak_title = self.peak_box.table, self.peak_box.title

        self.sweep_plot = pg.GraphicsLayoutWidget()  # the plot, and its legend below it, off the curves
        self.sweep_plot.setBackground("w")
        self.sweep_item = sweep = self.sweep_plot.addPlot(row=0, col=0)
        _style_plot(sweep)
        sweep.showGrid(x=True, y=True, alpha=0.2)
        sweep.getAxis("bottom").setTicks([[(k, str(k)) for k in range(1, 9)]])
        # below the plot, off the curves: one column per batch size
        self.sweep_legend = pg.LegendItem(colCount=2, frame=False)
        self.sweep_plot.addItem(self.sweep_legend, row=1, col=0)
        self.sweep_plot.ci.layout.setAlignment(self.sweep_legend, Qt.AlignmentFlag.AlignHCenter)
        self.measured_line = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine))
        sweep.addItem(self.measured_line, ignoreBounds=True)
        # the two sweep points that are the bars: a ring round each
        self.measured_points = pg.ScatterPlotItem(symbol="o", size=20, brush=None, pen=pg.mkPen("#222", width=2))
        self.measured_points.setZValue(10)
        sweep.addItem(self.measured_points)
        self.sweep_plot.setMinimumSize(240, 230)
        self.sweep_curves: dict[tuple[str, int], pg.PlotDataItem] = {}

        self.figures_layout = QBoxLayout(QBoxLayout.Direction.TopToBottom)
        self.figures_layout.addWidget(self.bar_plot, 4)
        self.figures_layout.addWidget(self.sweep_plot, 5)
        self.plots_area = QWidget()
        self.plots_area.setObjectName("memory_plots_area")
        self.plots_area.setStyleSheet("#memory_plots_area { background: white; }")
        self.plots_area.setAutoFillBackground(True)
        area = QVBoxLayout(self.plots_area)
        area.setContentsMargins(4, 4, 4, 4)
        area.addLayout(self.figures_layout, 1)

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

    def set_result(self, payload: dict | None) -> None:
        """Draw a memory payload ({"study", "sweep"}); None clears the panel."""
        self._payload = payload
        if payload is None:
            self._clear()
            self._show_message(EMPTY_TEXT, error=False)
            return
        study, sweep = payload["study"], payload.get("sweep") or []
        self._unit = choose_unit(bar_top(study))
        self._draw_bars(study)
        self._draw_headline(study)
        self._draw_peaks(study)
        self._draw_sweep(study, sweep)
        self.tensors.set_study(study, self._unit)
        variants = study["variants"]
        counts = " vs ".join(str(variants[name]["count"]) for name in VARIANTS)
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

    def result(self) -> dict | None:
        """The payload on screen, or None."""
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
        return {
            "memory_bars": {"root": self.bar_plot.ci},
            "memory_sweep": {"root": self.sweep_plot.ci},
            "memory": {
                "parts": [{"root": self.bar_plot.ci, "share": 2.0}, {"root": self.sweep_plot.ci, "share": 3.0}]
            },
        }

    def export(self, name: str, path: str, *, size=DEFAULT_SIZE, caption: str = "") -> None:
        """One figure ('memory_bars', 'memory_sweep' or both side by side, 'memory') as PNG, SVG or PDF."""
        if self._payload is None:
            raise OSError("There is no memory measurement to export yet: press Measure first.")
        caption = caption or self.headline_text()
        export_figure(path, size=size, caption=caption, **self.figures()[name])
        self._fit_bar_range()

    def export_png(self, path: str) -> None:
        """The bars and the sweep side by side with the headline under them, slide-sized."""
        self.export("memory", path, size=slide_size(0.5))

    # drawing ----------------------------------------------------------------------------------

    def _draw_bars(self, study: dict) -> None:
        name, size = self._unit
        unfused, fused = study["variants"]["unfused"], study["variants"]["fused"]
        ctx = fused.get("ctx_attribute_bytes", 0)
        self.bar_items["unfused"].setOpts(height=[unfused["saved_bytes"] / size])
        self.bar_items["fused"].setOpts(height=[fused["saved_bytes"] / size])
        self.bar_items["fused_ctx"].setOpts(y0=[fused["saved_bytes"] / size], height=[ctx / size])
        set_axis_label(self.bar_item.getAxis("left"), f"saved ({name})", self.view.theme, points=13)
        self.bar_texts["unfused"].setText(
            f"{format_in(unfused['saved_bytes'], self._unit)}\n{unfused['count']} tensors"
        )
        self.bar_texts["unfused"].setPos(0, unfused["saved_bytes"] / size)
        fused_text = f"{format_in(fused['saved_bytes'], self._unit)}\n{fused['count']} tensors"
        if ctx:
            fused_text += f"\n+ {format_bytes(ctx)} on ctx"
        self.bar_texts["fused"].setText(fused_text)
        self.bar_texts["fused"].setPos(1, (fused["saved_bytes"] + ctx) / size)
        for text in self.bar_texts.values():
            text.show()
        self._fit_bar_range()

    def _fit_bar_range(self, *_args) -> None:
        """Room above the taller bar and beside the outer bars for their figures, whatever the
        plot's size: the texts are in pixels, the bars in bytes and bar widths."""
        if self._payload is None:
            return
        top = bar_top(self._payload["study"]) / self._unit[1]
        view = self.bar_item.getViewBox()
        text_height = max(t.boundingRect().height() for t in self.bar_texts.values()) + 6
        room = max(view.height() - text_height, 0.2 * view.height(), 1.0)
        upper = top * view.height() / room if top > 0 else 1.0
        self.bar_item.setYRange(0, upper, padding=0)
        # half the widest text, as a fraction of the view: the x range reaches that far past each bar
        axis = self.bar_item.getAxis("bottom")
        metrics = QFontMetricsF(axis.style.get("tickFont") or axis.font())
        widest = max(
            *(t.boundingRect().width() for t in self.bar_texts.values()),
            *(metrics.horizontalAdvance(line) + 8 for text in BAR_LABELS.values() for line in text.splitlines()),
        )
        half = widest / 2 / max(view.width(), 1.0)
        side = max(0.6, half / (1 - 2 * half)) if half < 0.45 else 4.0
        self.bar_item.setXRange(-side, 1 + side, padding=0)

    def _draw_headline(self, study: dict) -> None:
        self.headline.setText(headline(study, self._unit))
        self.checks_label.setText(checks_html(study))

    def _draw_peaks(self, study: dict) -> None:
        self.peak_box.set_study(study)
        self._show_cpu_note()

    def _show_cpu_note(self) -> None:
        """Where peaks come from, after a CPU measurement on a machine that has CUDA to offer."""
        cuda_result = bool(self._payload) and all(
            "peak_bytes" in self._payload["study"]["variants"][name] for name in VARIANTS
        )
        has_cuda = any(name.startswith("cuda") for name in self._devices)
        self.cpu_note.setVisible(bool(self._payload) and has_cuda and not cuda_result)

    def _draw_sweep(self, study: dict, sweep: list[dict]) -> None:
        plot = self.sweep_item
        self._clear_sweep()
        name, size = self._unit
        batches = sorted({row["batch"] for row in sweep})
        colours = {batch: BATCH_COLOURS[k % len(BATCH_COLOURS)] for k, batch in enumerate(batches)}
        styles = {"unfused": (Qt.PenStyle.SolidLine, "o"), "fused": (Qt.PenStyle.DashLine, "t")}
        width = 4 if self.view.theme.high_contrast else 3
        for (variant, batch), (x, y) in sweep_curves(sweep, size).items():  # unfused first: the legend's rows
            style, symbol = styles[variant]
            curve = plot.plot(
                x,
                y,
                pen=pg.mkPen(colours[batch], width=width, style=style),
                symbol=symbol,
                symbolSize=8,
                symbolBrush=colours[batch],
                symbolPen=None,
            )
            self.sweep_curves[(variant, batch)] = curve
            self.sweep_legend.addItem(curve, f"{variant}, N={batch}")
        set_axis_label(plot.getAxis("left"), f"saved ({name})", self.view.theme, points=13)
        self.measured_line.setPos(study["layers"])
        self.measured_line.show()
        x, y = measured_points(study, sweep, size)
        self.measured_points.setData(x=x, y=y)
        if x:
            self.sweep_legend.addItem(self.measured_points, "the bars")
        self._style_legends()
        plot.setXRange(0.7, 8.3, padding=0)
        plot.enableAutoRange(axis="y")

    def _pin_legend_size(self, legend: pg.LegendItem) -> None:
        """A legend at the size of its entries: a layout cell would otherwise squeeze or stretch it."""
        legend.setMinimumSize(0, 0)
        legend.setMaximumSize(10_000, 10_000)
        legend.layout.invalidate()
        # the size of its rows and columns, plus the labels' right-hand margin
        size = legend.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize) + QSizeF(16, 4)
        legend.setMinimumSize(size)
        legend.setMaximumSize(size)

    def _style_legends(self) -> None:
        theme = self.view.theme
        for legend in (self.bar_legend, self.sweep_legend):
            legend.setLabelTextSize(f"{theme.pt(12)}pt")
            legend.setLabelTextColor(theme.ink)
            for _sample, label in legend.items:
                label.setText(label.text, size=f"{theme.pt(12)}pt", color=theme.ink)
            self._pin_legend_size(legend)
        for widget in (self.bar_plot, self.sweep_plot):  # the scene's minimum is the widget's
            least = widget.ci.effectiveSizeHint(Qt.SizeHint.MinimumSize)
            widget.setMinimumSize(max(200, round(least.width())), max(170, round(least.height())))

    def _clear_sweep(self) -> None:
        for curve in self.sweep_curves.values():
            self.sweep_item.removeItem(curve)
        self.sweep_curves.clear()
        self.sweep_legend.clear()

    def _clear(self) -> None:
        for item in self.bar_items.values():
            item.setOpts(height=[0])
        for text in self.bar_texts.values():
            text.setText("")
            text.hide()
        self._clear_sweep()
        self.tensors.set_study(None, UNITS[0])
        self.views.setTabText(self.views.indexOf(self.tensors), TENSORS_TAB)
        self.measured_line.hide()
        self.measured_points.clear()
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

    def _arrange(self) -> None:
        """Stacked in a tall dock; texts left of the plots, plots side by side, in a wide one."""
        needs = round(INFO_WIDTH * self.view.theme.scale) + self.bar_plot.minimumWidth() + self.sweep_plot.minimumWidth() + 40
        wide = self.width() > WIDE_RATIO * self.height() and self.width() >= needs
        if wide == self._wide:
            return
        self._wide = wide
        horizontal, vertical = QBoxLayout.Direction.LeftToRight, QBoxLayout.Direction.TopToBottom
        self.body.setDirection(horizontal if wide else vertical)
        self.figures_layout.setDirection(horizontal if wide else vertical)
        if wide:
            self.info.setFixedWidth(round(INFO_WIDTH * self.view.theme.scale))
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
        for plot, title in ((self.bar_item, "Saved for backward"), (self.sweep_item, "Saved vs. layers")):
            plot.setTitle(title, size=f"{theme.pt(14)}pt", color=theme.ink, bold=True)
            for name in ("left", "bottom"):
                style_axis(plot.getAxis(name), theme, tick_points=11)
        set_axis_label(self.sweep_item.getAxis("bottom"), "layers", theme, points=12)
        bottom = self.bar_item.getAxis("bottom")
        bottom.setHeight(round(2.6 * theme.pt(11) * 1.5))  # room for the two-line variant names
        for text in self.bar_texts.values():
            text.setFont(theme.font(12))
            text.setColor(theme.ink)
        self._style_legends()
        if self._wide:
            self.info.setFixedWidth(round(INFO_WIDTH * theme.scale))
        if self._payload is not None:
            self.set_result(self._payload)

    def _on_measure_clicked(self) -> None:
        self.measure_requested.emit(self.options())
