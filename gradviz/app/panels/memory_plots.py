"""The memory panel's two figures: the bars (what each variant saves for backward, the fused one
stacked with the bytes its Function keeps as ``ctx`` attributes) and the sweep over layers and
batch sizes, each a pyqtgraph scene with its legend below it, so an export carries the legend.

Split from ``memory_panel`` so the panel holds the texts, the controls and the arrangement; these
plots draw a memory study (``schema.memory.ConvBNStudy`` and its ``SweepRow``s) in one byte unit (``schema.units.choose_unit``) and nothing else.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QSizeF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QBoxLayout, QWidget

from gradviz.app.memory_display import VARIANTS, bar_top, measured_points, sweep_curves
from gradviz.app.panels.box_layout import column, fill
from gradviz.app.plot_style import plain_ticks, set_axis_label, style_axis
from gradviz.app.theme import ViewSettings
from gradviz.schema.memory import ConvBNStudy, SweepRow
from gradviz.schema.units import UNITS, format_bytes

BAR_LABELS = {"unfused": "unfused\nconv + BN", "fused": "fused\nFunction"}
UNFUSED_COLOUR = "#4c72b0"
FUSED_COLOUR = "#dd8452"
CTX_COLOUR = "#f5c9a4"  # the fused colour, lighter: bytes kept beside save_for_backward
BATCH_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
BAR_WIDTH = 0.6


def _style_plot(plot: pg.PlotItem) -> None:
    """Ticks a reader can count, no mouse, no SI factor (the unit is in the label)."""
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plain_ticks(plot.getAxis("left"))
    plot.getAxis("left").setStyle(maxTickLevel=0)  # major ticks only: grid lines a reader can count
    plot.setMouseEnabled(x=False, y=False)
    plot.showGrid(y=True, alpha=0.2)


class MemoryPlots(QWidget):
    """The bars over the sweep (side by side in a wide panel), on white."""

    def __init__(self, view: ViewSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self._study: ConvBNStudy | None = None
        self._unit: tuple[str, int] = UNITS[0]
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
        bars.getViewBox().sigResized.connect(self.fit_bar_range)

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
        fill(self.figures_layout, (self.bar_plot, 4), (self.sweep_plot, 5))
        self.setObjectName("memory_plots_area")
        self.setStyleSheet("#memory_plots_area { background: white; }")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)  # a QWidget subclass draws no style sheet without it
        self.setAutoFillBackground(True)
        column((self.figures_layout, 1), parent=self, margins=4)

    # drawing ------------------------------------------------------------------------------------

    def draw(self, study: ConvBNStudy, sweep: list[SweepRow], unit: tuple[str, int]) -> None:
        """The bars of ``study`` and the ``sweep``'s curves, both y axes in ``unit`` (name, bytes)."""
        self._study, self._unit = study, unit
        self._draw_bars(study)
        self._draw_sweep(study, sweep)

    def clear(self) -> None:
        """No bars, curves or marks."""
        self._study, self._unit = None, UNITS[0]
        for item in self.bar_items.values():
            item.setOpts(height=[0])
        for text in self.bar_texts.values():
            text.setText("")
            text.hide()
        self.clear_sweep()
        self.measured_line.hide()
        self.measured_points.clear()

    def figures(self) -> dict[str, dict]:
        """What ``figures.export_figure`` draws: the bars, the sweep, or both side by side."""
        return {
            "memory_bars": {"root": self.bar_plot.ci},
            "memory_sweep": {"root": self.sweep_plot.ci},
            "memory": {
                "parts": [{"root": self.bar_plot.ci, "share": 2.0}, {"root": self.sweep_plot.ci, "share": 3.0}]
            },
        }

    def set_side_by_side(self, wide: bool) -> None:
        self.figures_layout.setDirection(QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)

    def minimum_plots_width(self) -> int:
        """The two plots' minimum widths side by side."""
        return self.bar_plot.minimumWidth() + self.sweep_plot.minimumWidth()

    def _draw_bars(self, study: ConvBNStudy) -> None:
        name, size = self._unit
        unfused, fused = study.unfused, study.fused
        ctx = fused.ctx_attribute_bytes
        self.bar_items["unfused"].setOpts(height=[unfused.saved_bytes / size])
        self.bar_items["fused"].setOpts(height=[fused.saved_bytes / size])
        self.bar_items["fused_ctx"].setOpts(y0=[fused.saved_bytes / size], height=[ctx / size])
        set_axis_label(self.bar_item.getAxis("left"), f"saved ({name})", self.view.theme, points=13)
        self.bar_texts["unfused"].setText(
            f"{format_bytes(unfused.saved_bytes, self._unit, three_figures=True)}\n{unfused.count} tensors"
        )
        self.bar_texts["unfused"].setPos(0, unfused.saved_bytes / size)
        fused_text = f"{format_bytes(fused.saved_bytes, self._unit, three_figures=True)}\n{fused.count} tensors"
        if ctx:
            fused_text += f"\n+ {format_bytes(ctx)} on ctx"
        self.bar_texts["fused"].setText(fused_text)
        self.bar_texts["fused"].setPos(1, (fused.saved_bytes + ctx) / size)
        for text in self.bar_texts.values():
            text.show()
        self.fit_bar_range()

    def fit_bar_range(self, *_args) -> None:
        """Room above the taller bar and beside the outer bars for their figures, whatever the
        plot's size: the texts are in pixels, the bars in bytes and bar widths."""
        if self._study is None:
            return
        top = bar_top(self._study) / self._unit[1]
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

    def _draw_sweep(self, study: ConvBNStudy, sweep: list[SweepRow]) -> None:
        plot = self.sweep_item
        self.clear_sweep()
        name, size = self._unit
        batches = sorted({row.batch for row in sweep})
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
        self.measured_line.setPos(study.layers)
        self.measured_line.show()
        x, y = measured_points(study, sweep, size)
        self.measured_points.setData(x=x, y=y)
        if x:
            self.sweep_legend.addItem(self.measured_points, "the bars")
        self.style_legends()
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

    def style_legends(self) -> None:
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

    def clear_sweep(self) -> None:
        for curve in self.sweep_curves.values():
            self.sweep_item.removeItem(curve)
        self.sweep_curves.clear()
        self.sweep_legend.clear()

    def apply_theme(self) -> None:
        """Titles, axes, texts and legends at the theme's sizes and ink."""
        theme = self.view.theme
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
        self.style_legends()
