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

import time
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, QSizeF, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetricsF, QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QApplication,
    QBoxLayout,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.figures import export_figure
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
from gradviz.app.plot_style import plain_ticks, set_axis_label, style_axis
from gradviz.app.state import MemorySettings
from gradviz.app.theme import ViewSettings
from gradviz.schema.settings import DTYPES
from gradviz.schema.units import UNITS, format_bytes

BAR_LABELS = {"unfused": "unfused\nconv + BN", "fused": "fused\nFunction"}
UNFUSED_COLOUR = "#4c72b0"
FUSED_COLOUR = "#dd8452"
CTX_COLOUR = "#f5c9a4"  # the fused colour, lighter: bytes kept beside save_for_backward
BATCH_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
EMPTY_TEXT = "No measurement yet: pick a stack and press Measure."
CPU_NOTE = "CUDA peak memory is measured when the device is CUDA."
BAR_WIDTH = 0.6
EXPORT_WIDTH = 1920
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


def _spin(low: int, high: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setToolTip(tip)
    return box


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
        self._measuring_since = 0.0
        self._wide: bool | None = None
        self._build_controls()
        self._build_results()
        self.set_devices(["cpu"])

        self.info = QWidget()
        info = QVBoxLayout(self.info)
        info.setContentsMargins(0, 0, 0, 0)
        info.addLayout(self._controls)
        info.addLayout(self._status)
        info.addWidget(self.headline)
        info.addWidget(self.checks_label)
        info.addWidget(self.cpu_note)
        info.addWidget(self.peak_box)
        info.addStretch(1)
        self.body = QBoxLayout(QBoxLayout.Direction.TopToBottom, self)
        self.body.setContentsMargins(6, 4, 6, 4)
        self.body.addWidget(self.info)
        self.body.addWidget(self.stack, 1)
        self._connect_state()
        self.measure_button.clicked.connect(self._on_measure_clicked)
        self._clock = QTimer(self, interval=100)
        self._clock.timeout.connect(self._show_elapsed)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()
        self._arrange()
        self.set_result(None)

    # building ---------------------------------------------------------------------------------

    def _build_controls(self) -> None:
        self.layers_spin = _spin(1, 8, "Conv2d + BatchNorm2d pairs in the stack")
        self.batch_spin = _spin(1, 1024, "N: batch size")
        self.channels_spin = _spin(1, 256, "C: input channels")
        self.height_spin = _spin(1, 1024, "H: input height")
        self.width_spin = _spin(1, 1024, "W: input width")
        self.shape_spins = (self.batch_spin, self.channels_spin, self.height_spin, self.width_spin)
        for box, prefix in zip(self.shape_spins, "NCHW"):
            box.setPrefix(f"{prefix} ")
        self.out_channels_spin = _spin(1, 1024, "Output channels of every conv")
        self.kernel_spin = _spin(1, 15, "Kernel size (k x k, stride 1, no padding)")
        self.count_spins = {"layers": self.layers_spin, "out_channels": self.out_channels_spin, "kernel": self.kernel_spin}
        self.dtype_combo = QComboBox()
        self.dtype_combo.addItems(sorted(DTYPES))  # float32 first: the study's default
        self.device_combo = QComboBox()
        self.device_combo.setToolTip("Where to measure; peak memory is measured on CUDA")
        self.device_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.measure_button = QPushButton("Measure")
        self.measure_button.setToolTip("Run both variants in the worker and measure what they save")

        shape = QHBoxLayout()
        shape.setSpacing(2)
        for box in self.shape_spins:
            shape.addWidget(box)
        # a grid three rows high: the panel fits a narrow dock beside the Jacobians
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(3)
        grid.addWidget(QLabel("layers"), 0, 0)
        grid.addWidget(self.layers_spin, 0, 1)
        grid.addWidget(QLabel("out ch."), 0, 2)
        grid.addWidget(self.out_channels_spin, 0, 3)
        grid.addWidget(QLabel("kernel"), 0, 4)
        grid.addWidget(self.kernel_spin, 0, 5)
        grid.addWidget(QLabel("input"), 1, 0)
        grid.addLayout(shape, 1, 1, 1, 5)
        grid.addWidget(QLabel("dtype"), 2, 0)
        grid.addWidget(self.dtype_combo, 2, 1)
        grid.addWidget(QLabel("device"), 2, 2)
        grid.addWidget(self.device_combo, 2, 3)
        grid.addWidget(self.measure_button, 2, 4, 1, 2)
        self._controls = QHBoxLayout()
        self._controls.addLayout(grid)
        self._controls.addStretch(1)

        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self._status = QVBoxLayout()
        self._status.setSpacing(2)
        self._status.addWidget(self.progress)
        self._status.addWidget(self.status)
        self.progress.hide()
        self.status.hide()

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

        self.peak_table = QTableWidget(2, 3)
        self.peak_table.setHorizontalHeaderLabels(["saved", "end of forward", "peak"])
        self.peak_table.setVerticalHeaderLabels(["unfused", "fused"])
        self.peak_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.peak_table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.peak_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.peak_table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.peak_table.setToolTip(
            "CUDA memory above the starting allocation: after forward, and the peak over forward + backward"
        )
        self.peak_table.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)
        self.peak_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.peak_table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.peak_table.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Maximum)
        self.peak_title = QLabel("CUDA memory")
        self.cpu_note = QLabel(CPU_NOTE)
        self.cpu_note.setWordWrap(True)
        self.peak_box = QWidget()  # beside the texts, on CUDA results only
        side = QVBoxLayout(self.peak_box)
        side.setContentsMargins(0, 4, 0, 0)
        side.addWidget(self.peak_title)
        side.addWidget(self.peak_table)

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

        self.stack = QStackedWidget()
        self.stack.addWidget(self.plots_area)
        self.stack.addWidget(self.message)

    # public API -------------------------------------------------------------------------------

    def options(self) -> dict:
        """The options the controls show, as the worker's "memory" request takes them."""
        return self.state.to_dict()

    def set_devices(self, names: list[str]) -> None:
        """Offer these devices, keeping the current one if it is still there."""
        self._devices = list(names)
        with QSignalBlocker(self.device_combo):
            self.device_combo.clear()
            self.device_combo.addItems(list(names))
        self._on_device_changed()
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
        self.stack.setCurrentWidget(self.plots_area)

    def set_error(self, message: str) -> None:
        """Show why the measurement failed, in place of the plots."""
        self.set_measuring(False)
        self._payload = None
        self._clear()
        self._show_message(message, error=True)

    def set_measuring(self, measuring: bool, text: str = "") -> None:
        """A measurement runs (Measure disabled, a progress bar) or not; ``text`` says what waits."""
        self.measure_button.setEnabled(not measuring)
        self.progress.setVisible(measuring)
        self.status.setVisible(bool(measuring or text))
        if measuring:
            if not self._clock.isActive():
                self._measuring_since = time.monotonic()
                self.progress.setRange(0, 0)  # busy until the first progress report
                self._clock.start()
            self._status_text = text or "Measuring both variants"
            self._show_elapsed()
        else:
            self._clock.stop()
            self.status.setText(text)

    def set_progress(self, done: int, total: int) -> None:
        """Stacks measured so far (the study, then each row of the sweep)."""
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done} / {total} stacks")

    def is_measuring(self) -> bool:
        return self._clock.isActive()

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

    def export(self, name: str, path: str, *, size=(EXPORT_WIDTH, 1080), caption: str = "") -> None:
        """One figure ('memory_bars', 'memory_sweep' or both side by side, 'memory') as PNG, SVG or PDF."""
        if self._payload is None:
            raise OSError("There is no memory measurement to export yet: press Measure first.")
        caption = caption or self.headline_text()
        export_figure(path, size=size, caption=caption, **self.figures()[name])
        self._fit_bar_range()

    def export_png(self, path: str) -> None:
        """The bars and the sweep side by side with the headline under them, slide-sized."""
        self.export("memory", path, size=(EXPORT_WIDTH, round(EXPORT_WIDTH * 0.5)))

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
        variants = study["variants"]
        cuda = all("peak_bytes" in variants[name] for name in VARIANTS)
        self.peak_box.setVisible(cuda)
        self._show_cpu_note()
        if not cuda:
            self.peak_table.clearContents()
            return
        font = self.view.theme.font(12)
        for row, name in enumerate(VARIANTS):
            v = variants[name]
            for col, value in enumerate((v["saved_bytes"], v.get("end_of_forward_bytes"), v["peak_bytes"])):
                item = QTableWidgetItem("—" if value is None else format_bytes(value))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setFont(font)
                self.peak_table.setItem(row, col, item)
        self.peak_table.resizeColumnsToContents()
        self.peak_table.resizeRowsToContents()

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
        self.measured_line.hide()
        self.measured_points.clear()
        self.headline.setText("")
        self.checks_label.setText("")
        self.peak_table.clearContents()
        self.peak_box.hide()
        self.cpu_note.hide()
        self._unit = UNITS[0]

    def _show_message(self, text: str, *, error: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {FAIL_COLOUR if error else self.view.theme.muted}")
        self.stack.setCurrentWidget(self.message)

    def _show_elapsed(self) -> None:
        seconds = time.monotonic() - self._measuring_since
        self.status.setText(f"{self._status_text}… {seconds:.1f} s")

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
        self.status.setFont(theme.font(11))
        self.peak_title.setFont(theme.font(13, bold=True))
        self.cpu_note.setFont(theme.font(11))
        self.cpu_note.setStyleSheet(f"color: {theme.muted}; font-style: italic")
        self.message.setFont(theme.font(15))
        table_font = theme.font(12)
        for widget in (self.peak_table, self.peak_table.horizontalHeader(), self.peak_table.verticalHeader()):
            widget.setFont(table_font)
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

    # state <-> controls -------------------------------------------------------------------------

    def _connect_state(self) -> None:
        state = self.state
        for name, spin in self.count_spins.items():
            getattr(state, f"{name}_changed").connect(lambda _value, name=name: self._on_count_changed(name))
            spin.valueChanged.connect(lambda value, name=name: state.set(name, value))
        state.shape_changed.connect(self._on_shape_changed)
        for box in self.shape_spins:
            box.valueChanged.connect(self._on_shape_edited)
        state.dtype_changed.connect(self._on_dtype_changed)
        self.dtype_combo.currentTextChanged.connect(lambda text: setattr(state, "dtype", text))
        state.device_changed.connect(self._on_device_changed)
        self.device_combo.currentTextChanged.connect(lambda text: setattr(state, "device", text))
        for name in self.count_spins:
            self._on_count_changed(name)
        self._on_shape_changed()
        self._on_dtype_changed()
        self._on_device_changed()

    # A control that cannot show a value (out of its range, a device not offered) shows the
    # nearest it can and writes that back: what is measured is what the panel shows.

    def _on_count_changed(self, name: str) -> None:
        spin, value = self.count_spins[name], self.state.get(name)
        with QSignalBlocker(spin):
            spin.setValue(min(max(value, spin.minimum()), spin.maximum()))
        if spin.value() != value:
            self.state.set(name, spin.value())

    def _on_shape_changed(self, *_args) -> None:
        for box, value in zip(self.shape_spins, self.state.shape):
            with QSignalBlocker(box):
                box.setValue(min(max(value, box.minimum()), box.maximum()))
        if self._shown_shape() != self.state.shape:
            self.state.shape = self._shown_shape()

    def _on_shape_edited(self, _value: int) -> None:
        self.state.shape = self._shown_shape()

    def _shown_shape(self) -> tuple[int, int, int, int]:
        return tuple(box.value() for box in self.shape_spins)

    def _on_dtype_changed(self, *_args) -> None:
        with QSignalBlocker(self.dtype_combo):
            self.dtype_combo.setCurrentText(self.state.dtype)

    def _on_device_changed(self, *_args) -> None:
        combo = self.device_combo
        with QSignalBlocker(combo):
            combo.setCurrentIndex(max(combo.findText(self.state.device), 0))
        if combo.count() and combo.currentText() != self.state.device:
            self.state.device = combo.currentText()

    def _on_measure_clicked(self) -> None:
        self.measure_requested.emit(self.options())
