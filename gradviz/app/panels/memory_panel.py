"""The memory panel: what Conv2d + BatchNorm2d saves for backward against the fused Function.

The worker's "memory" request measures; this panel only draws the answer: two bars (the fused
one stacked with the bytes its Function keeps as ``ctx`` attributes), a headline with the saving
and whether it matches the formula, the sweep over layers and batch sizes, and on CUDA the peak
and end-of-forward memory. Its display prep (one byte unit, the texts, the sweep's curves) comes from
``gradviz.app.memory_display``; its controls show a ``MemorySettings`` state (the defaults are
``schema.settings.MemoryOptions``').
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, QSizeF, Qt, Signal
from PySide6.QtGui import QFont, QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.figures import save_png
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
from gradviz.app.state import MemorySettings
from gradviz.schema.settings import DTYPES
from gradviz.schema.units import UNITS, format_bytes

BAR_LABELS = {"unfused": "unfused\nConv2d+BatchNorm2d", "fused": "fused\nFunction"}
UNFUSED_COLOUR = "#4c72b0"
FUSED_COLOUR = "#dd8452"
CTX_COLOUR = "#f5c9a4"  # the fused colour, lighter: bytes kept beside save_for_backward
BATCH_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
INK = "#222"
EMPTY_TEXT = "No measurement yet: pick a stack and press Measure."
CPU_NOTE = "CUDA peak memory is measured when the device is CUDA."
BAR_WIDTH = 0.6


def _style_plot(plot: pg.PlotItem, title: str, font: QFont) -> None:
    """Dark ink on white, ticks readable from the back of a lecture hall."""
    plot.setTitle(title, size="15pt", color=INK, bold=True)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(INK)
        axis.setTextPen(INK)
        axis.setTickFont(font)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.getAxis("left").enableAutoSIPrefix(False)  # the unit is in the label: no "(x0.001)"
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

    def __init__(self, options: MemorySettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = options if options is not None else MemorySettings(parent=self)
        self._payload: dict[str, Any] | None = None
        self._unit: tuple[str, int] = UNITS[0]
        self._build_controls()
        self._build_results()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(self._controls)
        layout.addWidget(self.stack, 1)
        self._connect_state()
        self.measure_button.clicked.connect(self._on_measure_clicked)
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
        self.set_devices(["cpu"])
        self.measure_button = QPushButton("Measure")
        self.measure_button.setToolTip("Run both variants in the worker and measure what they save")
        font = self.measure_button.font()
        font.setBold(True)
        self.measure_button.setFont(font)

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

    def _build_results(self) -> None:
        tick_font = QFont()
        tick_font.setPointSize(12)

        self.headline = QLabel()
        font = self.headline.font()
        font.setPointSize(17)
        font.setBold(True)
        self.headline.setFont(font)
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.checks_label = QLabel()
        font = self.checks_label.font()
        font.setPointSize(13)
        self.checks_label.setFont(font)
        self.checks_label.setTextFormat(Qt.TextFormat.RichText)
        self.checks_label.setWordWrap(True)
        self.checks_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.bar_plot = pg.PlotWidget(background="w")
        bars = self.bar_plot.getPlotItem()
        _style_plot(bars, "Saved for backward", tick_font)
        bars.getAxis("bottom").setTicks([[(k, BAR_LABELS[v]) for k, v in enumerate(VARIANTS)]])
        bars.getAxis("bottom").setHeight(60)  # room for the two-line variant names
        bars.getAxis("bottom").setGrid(False)
        bars.setXRange(-0.6, 1.6, padding=0)
        self.bar_items = {
            "unfused": pg.BarGraphItem(
                x=[0], height=[0], width=BAR_WIDTH, brush=UNFUSED_COLOUR, pen=pg.mkPen(INK)
            ),
            "fused": pg.BarGraphItem(
                x=[1], height=[0], width=BAR_WIDTH, brush=FUSED_COLOUR, pen=pg.mkPen(INK)
            ),
            "fused_ctx": pg.BarGraphItem(
                x=[1], y0=[0], height=[0], width=BAR_WIDTH, brush=CTX_COLOUR, pen=pg.mkPen(INK)
            ),
        }
        for item in self.bar_items.values():
            bars.addItem(item)
        self.bar_legend = bars.addLegend(offset=(-10, 10), labelTextSize="12pt", labelTextColor=INK)
        self.bar_legend.addItem(self.bar_items["fused_ctx"], "kept as ctx attributes")
        self.bar_texts = {
            name: pg.TextItem(color=INK, anchor=(0.5, 1.0)) for name in VARIANTS
        }  # figures above each bar
        label_font = QFont()
        label_font.setPointSize(13)
        for text in self.bar_texts.values():
            text.setFont(label_font)
            bars.addItem(text)
        self.bar_plot.setMinimumSize(220, 180)
        self.bar_plot.setMaximumHeight(330)  # the sweep below gets the rest of a tall dock

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
        self._table_font = QFont(self.font())
        self._table_font.setPointSize(13)
        self.peak_table.setFont(self._table_font)
        self.peak_table.horizontalHeader().setFont(self._table_font)
        self.peak_table.verticalHeader().setFont(self._table_font)
        self.peak_title = QLabel("CUDA memory")
        font = self.peak_title.font()
        font.setPointSize(14)
        font.setBold(True)
        self.peak_title.setFont(font)
        self.cpu_note = QLabel(CPU_NOTE)
        self.cpu_note.setWordWrap(True)
        self.cpu_note.setStyleSheet("color: #555")
        font = self.cpu_note.font()
        font.setPointSize(12)
        font.setItalic(True)
        self.cpu_note.setFont(font)
        self.peak_box = QWidget()  # next to the bars, on CUDA results only
        side = QVBoxLayout(self.peak_box)
        side.setContentsMargins(0, 30, 0, 0)
        side.addWidget(self.peak_title)
        side.addWidget(self.peak_table)
        side.addStretch(1)

        self.sweep_plot = pg.GraphicsLayoutWidget()  # the plot, and its legend beside it, off the curves
        self.sweep_plot.setBackground("w")
        self.sweep_item = sweep = self.sweep_plot.addPlot(row=0, col=0)
        _style_plot(sweep, "Saved vs. layers", tick_font)
        sweep.showGrid(x=True, y=True, alpha=0.2)
        sweep.setLabel("bottom", "layers", color=INK, **{"font-size": "13pt"})
        sweep.getAxis("bottom").setTicks([[(k, str(k)) for k in range(1, 9)]])
        # below the plot, off the curves: one column per batch size
        self.sweep_legend = pg.LegendItem(labelTextSize="12pt", labelTextColor=INK, colCount=2, frame=False)
        self.sweep_plot.addItem(self.sweep_legend, row=1, col=0)
        self.sweep_plot.ci.layout.setAlignment(self.sweep_legend, Qt.AlignmentFlag.AlignHCenter)
        self.measured_line = pg.InfiniteLine(
            angle=90, pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine)
        )
        sweep.addItem(self.measured_line, ignoreBounds=True)
        # the two sweep points that are the bars: a ring round each
        self.measured_points = pg.ScatterPlotItem(symbol="o", size=20, brush=None, pen=pg.mkPen(INK, width=2))
        self.measured_points.setZValue(10)
        sweep.addItem(self.measured_points)
        self.sweep_plot.setMinimumSize(260, 180)
        self.sweep_curves: dict[tuple[str, int], pg.PlotDataItem] = {}

        bar_column = QVBoxLayout()
        bar_column.addWidget(self.bar_plot, 1)
        bar_column.addWidget(self.cpu_note)
        bars_and_peaks = QHBoxLayout()
        bars_and_peaks.addLayout(bar_column, 1)
        bars_and_peaks.addWidget(self.peak_box, 0)
        figures = QVBoxLayout()  # stacked: the panel lives in a tall, narrow dock
        figures.addLayout(bars_and_peaks, 4)
        figures.addWidget(self.sweep_plot, 5)
        self.plots_area = QWidget()
        self.plots_area.setObjectName("memory_plots_area")
        self.plots_area.setStyleSheet("#memory_plots_area { background: white; }")
        self.plots_area.setAutoFillBackground(True)
        area = QVBoxLayout(self.plots_area)
        area.setContentsMargins(8, 6, 8, 6)
        area.addWidget(self.headline)
        area.addWidget(self.checks_label)
        area.addLayout(figures, 1)

        self.message = QLabel()
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.message.font()
        font.setPointSize(16)
        self.message.setFont(font)

        self.stack = QStackedWidget()
        self.stack.addWidget(self.plots_area)
        self.stack.addWidget(self.message)

    # public API -------------------------------------------------------------------------------

    def options(self) -> dict:
        """The options the controls show, as the worker's "memory" request takes them."""
        return self.state.to_dict()

    def set_devices(self, names: list[str]) -> None:
        """Offer these devices, keeping the current one if it is still there."""
        with QSignalBlocker(self.device_combo):
            self.device_combo.clear()
            self.device_combo.addItems(list(names))
        self._on_device_changed()

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
        self._payload = None
        self._clear()
        self._show_message(message, error=True)

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

    def export_png(self, path: str) -> None:
        """Headline, bars, table and sweep as one PNG."""
        save_png(self.plots_area.grab(), path)

    # drawing ----------------------------------------------------------------------------------

    def _draw_bars(self, study: dict) -> None:
        name, size = self._unit
        unfused, fused = study["variants"]["unfused"], study["variants"]["fused"]
        ctx = fused.get("ctx_attribute_bytes", 0)
        self.bar_items["unfused"].setOpts(height=[unfused["saved_bytes"] / size])
        self.bar_items["fused"].setOpts(height=[fused["saved_bytes"] / size])
        self.bar_items["fused_ctx"].setOpts(y0=[fused["saved_bytes"] / size], height=[ctx / size])
        top = bar_top(study) / size
        self.bar_plot.getPlotItem().setYRange(0, top * 1.3 if top > 0 else 1, padding=0)
        self.bar_plot.getPlotItem().setLabel("left", f"saved ({name})", color=INK, **{"font-size": "13pt"})
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

    def _draw_headline(self, study: dict) -> None:
        self.headline.setText(headline(study, self._unit))
        self.checks_label.setText(checks_html(study))

    def _draw_peaks(self, study: dict) -> None:
        variants = study["variants"]
        cuda = all("peak_bytes" in variants[name] for name in VARIANTS)
        self.peak_box.setVisible(cuda)
        self.cpu_note.setVisible(not cuda)
        if not cuda:
            self.peak_table.clearContents()
            return
        for row, name in enumerate(VARIANTS):
            v = variants[name]
            for col, value in enumerate((v["saved_bytes"], v.get("end_of_forward_bytes"), v["peak_bytes"])):
                item = QTableWidgetItem("—" if value is None else format_bytes(value))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setFont(self._table_font)
                self.peak_table.setItem(row, col, item)
        self.peak_table.resizeColumnsToContents()
        self.peak_table.resizeRowsToContents()

    def _draw_sweep(self, study: dict, sweep: list[dict]) -> None:
        plot = self.sweep_item
        self._clear_sweep()
        name, size = self._unit
        batches = sorted({row["batch"] for row in sweep})
        colours = {batch: BATCH_COLOURS[k % len(BATCH_COLOURS)] for k, batch in enumerate(batches)}
        styles = {"unfused": (Qt.PenStyle.SolidLine, "o"), "fused": (Qt.PenStyle.DashLine, "t")}
        for (variant, batch), (x, y) in sweep_curves(sweep, size).items():  # unfused first: the legend's rows
            style, symbol = styles[variant]
            curve = plot.plot(
                x,
                y,
                pen=pg.mkPen(colours[batch], width=3, style=style),
                symbol=symbol,
                symbolSize=8,
                symbolBrush=colours[batch],
                symbolPen=None,
            )
            self.sweep_curves[(variant, batch)] = curve
            self.sweep_legend.addItem(curve, f"{variant}, N={batch}")
        plot.setLabel("left", f"saved ({name})", color=INK, **{"font-size": "13pt"})
        self.measured_line.setPos(study["layers"])
        self.measured_line.show()
        x, y = measured_points(study, sweep, size)
        self.measured_points.setData(x=x, y=y)
        if x:
            self.sweep_legend.addItem(self.measured_points, "the bars")
        self._pin_legend_size()
        plot.setXRange(0.7, 8.3, padding=0)
        plot.enableAutoRange(axis="y")

    def _pin_legend_size(self) -> None:
        """The legend at the size of its entries: a layout cell would otherwise squeeze or stretch it."""
        legend = self.sweep_legend
        legend.setMinimumSize(0, 0)
        legend.setMaximumSize(10_000, 10_000)
        legend.updateSize()  # the size of its rows and columns, as when it floats over a plot
        size = legend.geometry().size() + QSizeF(16, 4)  # the labels' right-hand margin
        legend.setMinimumSize(size)
        legend.setMaximumSize(size)

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
        self.cpu_note.show()
        self._unit = UNITS[0]

    def _show_message(self, text: str, *, error: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {FAIL_COLOUR if error else '#555'}")
        self.stack.setCurrentWidget(self.message)

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
