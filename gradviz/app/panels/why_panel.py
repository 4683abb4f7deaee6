"""The "Why?" panel: why a check fails, from an eps sweep.

It renders one ``SweepResult`` (the worker's "sweep" request measures it): on the left, the
Jacobian error of the selected block against eps on log-log axes, with its worst cells and the
slope-2 (truncation) and slope -1 (round-off) reference lines, the check's eps and the best one
marked; below it, the directional Taylor remainder against h with slope-2 (right backward) and
slope-1 (wrong backward) references. On the right, the verdict in words and the buttons that act
on it: re-run at the suggested eps, re-draw the inputs away from a kink, re-check in float64.
The buttons only emit signals; the window owns the settings and the runs. All the panel
computes is display prep: where to anchor a reference line.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QPen
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.figures import save_png
from gradviz.schema.precision import PrecisionCheck
from gradviz.schema.sweep import EPS_FIXABLE, BlockSweep, SweepResult, Verdict, jitter_for

INK = "#222"
EMPTY_TEXT = "No sweep yet. Sweep the Function to see whether the backward or the finite difference is wrong."
VERDICT_COLOURS = {
    Verdict.BACKWARD_WRONG: "#c62828",
    Verdict.NON_DIFFERENTIABLE: "#6a1b9a",
    Verdict.PRECISION: "#1565c0",
    Verdict.EPS_TOO_SMALL: "#b26a00",
    Verdict.EPS_TOO_LARGE: "#b26a00",
    Verdict.INCONCLUSIVE: "#555555",
    Verdict.BACKWARD_RIGHT: "#1a7f37",
}
BLOCK_COLOUR = "#1f4e9c"
CELL_COLOURS = ("#d95f02", "#7570b3", "#1b9e77", "#e7298a", "#66a61e")
REMAINDER_COLOUR = "#1f4e9c"
CURVATURE_COLOUR = "#8c6d31"
REFERENCE_PEN = pg.mkPen("#888888", width=1.5, style=Qt.PenStyle.DashLine)
EPS_PEN = pg.mkPen("#c62828", width=1.5, style=Qt.PenStyle.DashLine)
BEST_PEN = pg.mkPen("#1a7f37", width=1.5, style=Qt.PenStyle.DashLine)
FLOOR_PEN = pg.mkPen("#aaaaaa", width=1, style=Qt.PenStyle.DotLine)
WRONG_REFERENCE_PEN = pg.mkPen("#c62828", width=1.2, style=Qt.PenStyle.DotLine)
OVERALL = (-1, -1)
NO_VALLEY = (Verdict.BACKWARD_WRONG, Verdict.NON_DIFFERENTIABLE, Verdict.INCONCLUSIVE)
MIN_DECADES = 4  # a y range never narrower than this: a flat curve stays a flat line, with decade labels


def reference_line(steps: list[float], values: list[float | None], slope: float, at: int) -> tuple[list, list]:
    """Two points of a line of ``slope`` on log-log axes through ``(steps[at], values[at])``,
    spanning the steps: ``y = values[at] · (h / steps[at])^slope``."""
    h0, y0 = steps[at], values[at]
    xs = [min(steps), max(steps)]
    return xs, [y0 * (x / h0) ** slope for x in xs]


def positive(values: list[float] | None) -> np.ndarray:
    """Values ready for a log axis: non-positive and non-finite ones become gaps (NaN)."""
    array = np.asarray(values if values is not None else [], dtype=float)
    return np.where(np.isfinite(array) & (array > 0), array, np.nan)


def _style(plot: pg.PlotItem, title: str, x_label: str, y_label: str, font: QFont) -> None:
    plot.setTitle(title, size="13pt", color=INK, bold=True)
    plot.setLogMode(x=True, y=True)
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setMouseEnabled(x=False, y=False)
    for name, label in (("left", y_label), ("bottom", x_label)):
        axis = plot.getAxis(name)
        axis.setPen(INK)
        axis.setTextPen(INK)
        axis.setTickFont(font)
        axis.enableAutoSIPrefix(False)  # log axes: a "(x0.001)" would misread every tick
        axis.setLabel(label, color=INK, size="11pt")
    plot.getAxis("left").setStyle(maxTextLevel=0)  # label the decades only: minor labels pile up
    plot.getAxis("left").setWidth(76)  # tick labels such as 0.0001 and the axis title side by side


def _plot_with_legend_below(title: str, x_label: str, y_label: str, font: QFont):
    """A white plot with its legend under it (a line of text), where it never hides a curve."""
    plot = pg.PlotWidget(background="w")
    _style(plot.getPlotItem(), title, x_label, y_label, font)
    legend = QLabel()
    legend.setWordWrap(True)
    legend.setTextFormat(Qt.TextFormat.RichText)
    legend.setStyleSheet(f"background: white; color: {INK}; padding: 0 6px 4px 6px")
    legend.setMinimumHeight(2 * legend.fontMetrics().lineSpacing() + 6)  # room to wrap onto a second line
    legend.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    figure = QWidget()
    figure.setStyleSheet("background: white")
    layout = QVBoxLayout(figure)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    layout.addWidget(plot, 1)
    layout.addWidget(legend)
    return figure, plot.getPlotItem(), legend


LINE_GLYPHS = {
    Qt.PenStyle.SolidLine: "━━",
    Qt.PenStyle.DashLine: "╍╍",
    Qt.PenStyle.DotLine: "┅┅",
}


def legend_html(entries: list[tuple[QPen, str]]) -> str:
    """``━━ name`` for every curve, in its colour and line style."""
    parts = []
    for pen, name in entries:
        glyph = LINE_GLYPHS.get(pen.style(), "━━")
        colour = pen.color().name()
        weight = "bold" if pen.widthF() >= 2.5 else "normal"
        parts.append(
            f'<span style="color:{colour}; font-weight:{weight}">{glyph}</span>&nbsp;{html.escape(name)}'
        )
    return "&nbsp;&nbsp;&nbsp; ".join(parts)


class WhyPanel(QWidget):
    """One sweep, drawn for the selected block; signals that ask the window for the next run."""

    rerun_at_eps = Signal(float)  # re-run the check with this eps
    redraw_requested = Signal(float)  # re-run with the inputs moved off kinks by this jitter
    use_float64_requested = Signal()  # re-run the check in float64
    sweep_requested = Signal(object)  # (output, input): sweep this block cell by cell
    block_changed = Signal(int, int)  # the user picked another block (-1, -1: the whole Function)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._sweep: SweepResult | None = None
        self._precision: PrecisionCheck | None = None
        self._block: tuple[int, int] = OVERALL
        self._cell: tuple[int, int] | None = None
        self.error_curves: dict[str, pg.PlotDataItem] = {}
        self.remainder_curves: dict[str, pg.PlotDataItem] = {}
        self._build()
        self.set_result(None)

    # building ---------------------------------------------------------------------------------

    def _build(self) -> None:
        tick_font = QFont()
        tick_font.setPointSize(10)
        self.error_figure, self.error_plot, self.error_legend = _plot_with_legend_below(
            "Jacobian error against eps", "eps", "max |numerical − analytic|", tick_font
        )
        self.remainder_figure, self.remainder_plot, self.remainder_legend = _plot_with_legend_below(
            "Taylor remainder along a random direction", "h", "|w·(f(x+hv) − f(x)) − h wᵀJv|", tick_font
        )
        for figure in (self.error_figure, self.remainder_figure):
            figure.setMinimumSize(260, 200)
        plots = QSplitter(Qt.Orientation.Vertical)
        plots.addWidget(self.error_figure)
        plots.addWidget(self.remainder_figure)
        plots.setChildrenCollapsible(False)
        self.plots_area = plots

        self.block_combo = QComboBox()
        self.block_combo.setToolTip("The block whose curves are drawn")
        self.block_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.block_combo.currentIndexChanged.connect(self._on_block_combo_changed)
        self.headline = QLabel()
        font = self.headline.font()
        font.setPointSize(15)
        font.setBold(True)
        self.headline.setFont(font)
        self.headline.setWordWrap(True)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.slopes = QLabel()
        self.slopes.setWordWrap(True)
        self.slopes.setStyleSheet("color: #333")
        self.precision_label = QLabel()
        self.precision_label.setWordWrap(True)
        self.precision_label.setStyleSheet("color: #1565c0")
        self.cell_label = QLabel()
        self.cell_label.setWordWrap(True)
        self.cell_label.setStyleSheet("color: #555")

        self.rerun_button = QPushButton("Re-run at the suggested eps")
        self.rerun_button.setToolTip("Run the check again with the eps at the bottom of the error valley")
        self.redraw_button = QPushButton("Re-draw inputs away from the kink")
        self.redraw_button.setToolTip("Run the check again with every input element moved a little (jitter)")
        self.float64_button = QPushButton("Re-check in float64")
        self.float64_button.setToolTip("Run the same check in float64, where eps and tolerance are not the problem")
        self.sweep_button = QPushButton("Sweep this block cell by cell")
        self.sweep_button.setToolTip("Only one direction was measured for this block; sweep every cell")
        for button in (self.rerun_button, self.redraw_button, self.float64_button, self.sweep_button):
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.rerun_button.clicked.connect(self._on_rerun_clicked)
        self.redraw_button.clicked.connect(self._on_redraw_clicked)
        self.float64_button.clicked.connect(self.use_float64_requested.emit)
        self.sweep_button.clicked.connect(self._on_sweep_clicked)

        block_row = QHBoxLayout()
        block_row.addWidget(QLabel("block"))
        block_row.addWidget(self.block_combo, 1)
        side = QVBoxLayout()
        side.setContentsMargins(8, 4, 4, 4)
        side.addLayout(block_row)
        side.addWidget(self.headline)
        side.addWidget(self.message)
        side.addWidget(self.slopes)
        side.addWidget(self.precision_label)
        side.addWidget(self.cell_label)
        side.addSpacing(8)
        for button in (self.rerun_button, self.redraw_button, self.float64_button, self.sweep_button):
            side.addWidget(button)
        side.addStretch(1)
        self.side = QWidget()
        self.side.setLayout(side)
        self.side.setMinimumWidth(280)
        self.side.setMaximumWidth(460)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(plots, 3)
        layout.addWidget(self.side, 2)

    # the model in -------------------------------------------------------------------------------

    def set_result(self, sweep: SweepResult | None, precision: PrecisionCheck | None = None) -> None:
        """Show ``sweep`` (and the check's float64 re-check, if any); None: the empty state."""
        self._sweep, self._precision = sweep, precision
        self.block_combo.blockSignals(True)
        self.block_combo.clear()
        if sweep is not None:
            for b in [sweep.overall, *sweep.blocks]:
                self.block_combo.addItem(b.title, (b.output, b.input))
        self.block_combo.blockSignals(False)
        if sweep is not None and sweep.block(*self._block) is None and self._block != OVERALL:
            self._block = OVERALL
        self._cell = None
        self._show()

    def select_block(self, output: int, input: int) -> None:
        """Draw block (output, input), as the Jacobian panel's selection says."""
        self._block = (output, input)
        self._cell = None
        self._show()

    def select_cell(self, row: int | None, col: int | None) -> None:
        """Bring cell (row, col) of the selected block forward when its curve was kept."""
        self._cell = None if row is None or col is None else (row, col)
        self._draw_errors(self._current())
        self._show_cell(self._current())

    def result(self) -> SweepResult | None:
        return self._sweep

    def block(self) -> tuple[int, int]:
        return self._block

    def headline_text(self) -> str:
        return self.headline.text()

    def message_text(self) -> str:
        return self.message.text()

    def export_png(self, path: str) -> None:
        save_png(self.grab(), path)

    # drawing --------------------------------------------------------------------------------------

    def _current(self) -> BlockSweep | None:
        if self._sweep is None:
            return None
        if self._block == OVERALL:
            return self._sweep.overall
        return self._sweep.block(*self._block) or self._sweep.overall

    def _show(self) -> None:
        b = self._current()
        index = next(
            (k for k in range(self.block_combo.count()) if tuple(self.block_combo.itemData(k)) == self._block), 0
        )
        self.block_combo.blockSignals(True)
        self.block_combo.setCurrentIndex(max(index, 0))
        self.block_combo.blockSignals(False)
        self.block_combo.setEnabled(b is not None)
        self._draw_errors(b)
        self._draw_remainder(b)
        self._show_text(b)
        self._show_buttons(b)
        self._show_cell(b)

    def _show_text(self, b: BlockSweep | None) -> None:
        sweep = self._sweep
        if sweep is None or b is None:
            self.headline.setText("Why?")
            self.headline.setStyleSheet(f"color: {INK}")
            self.message.setText(EMPTY_TEXT)
            self.slopes.setText("")
            self.precision_label.setText(self._precision.message if self._precision else "")
            return
        verdict = sweep.verdict if b is sweep.overall else b.verdict
        self.headline.setText(verdict.headline[:1].upper() + verdict.headline[1:])
        self.headline.setStyleSheet(f"color: {VERDICT_COLOURS[verdict]}")
        text = sweep.message if b is sweep.overall else b.message.replace(f"{b.title}: ", "", 1)
        self.message.setText(text)
        self.slopes.setText(self._slopes_text(b, sweep))
        self.precision_label.setText(self._precision.message if self._precision else "")

    @staticmethod
    def _slopes_text(b: BlockSweep, sweep: SweepResult) -> str:
        def slope(value: float | None) -> str:
            return "—" if value is None else f"{value:.2f}"

        parts = [
            f"Taylor remainder slope {slope(b.remainder_slope)} (right 2, wrong 1)",
            f"second difference slope {slope(b.curvature_slope)} (smooth 2, kink 1)",
        ]
        if b.swept and b.verdict not in NO_VALLEY:
            parts.append(f"error slopes {slope(b.truncation_slope)} above the best eps, {slope(b.roundoff_slope)} below")
            if b.columns is not None and b.columns < b.shape[1]:
                parts.append(f"{b.columns} of {b.shape[1]} columns swept")
        parts.append(f"{sweep.dtype}, eps={sweep.eps:g}, {sweep.seconds:.2f} s")
        return " · ".join(parts)

    def _show_buttons(self, b: BlockSweep | None) -> None:
        sweep = self._sweep
        best = sweep.best_eps if sweep is not None else None
        fixable = sweep is not None and sweep.verdict in EPS_FIXABLE and best is not None
        self.rerun_button.setEnabled(fixable)
        self.rerun_button.setText(f"Re-run at eps={best:g}" if fixable else "Re-run at the suggested eps")
        kink = sweep is not None and any(
            x.verdict == Verdict.NON_DIFFERENTIABLE for x in [sweep.overall, *sweep.blocks]
        )
        self.redraw_button.setEnabled(kink)
        low = sweep is not None and sweep.dtype != "float64"
        low = low or (self._precision is not None and self._precision.dtype != "float64")
        self.float64_button.setEnabled(low)
        self.float64_button.setVisible(low)
        narrow = b is not None and b is not (sweep.overall if sweep else None) and not b.swept
        self.sweep_button.setVisible(narrow)

    def _show_cell(self, b: BlockSweep | None) -> None:
        if b is None or self._cell is None or not b.swept:
            self.cell_label.setText("")
            return
        kept = next((c for c in b.cells if (c.row, c.col) == self._cell), None)
        if kept is None:
            self.cell_label.setText(
                f"Cell {self._cell[0]}, {self._cell[1]} is not among the {len(b.cells)} worst cells whose curves were kept."
            )
        else:
            self.cell_label.setText(f"Highlighted: {kept.label} (analytic {kept.analytic:.4g}).")

    def _draw_errors(self, b: BlockSweep | None) -> None:
        plot = self.error_plot
        plot.clear()
        self.error_legend.setText("")
        self.error_curves = {}
        sweep = self._sweep
        if sweep is None or b is None or not b.swept:
            if sweep is not None and b is not None:
                plot.setTitle("Jacobian error against eps (not swept for this block)", size="13pt", color=INK)
            return
        plot.setTitle("Jacobian error against eps", size="13pt", color=INK, bold=True)
        steps = sweep.steps
        curve = plot.plot(
            steps,
            positive(b.errors),
            pen=pg.mkPen(BLOCK_COLOUR, width=3),
            symbol="o",
            symbolSize=6,
            symbolBrush=BLOCK_COLOUR,
            symbolPen=None,
            connect="finite",
            name=f"{b.title}, largest",
        )
        self.error_curves["block"] = curve
        for k, cell in enumerate(b.cells):
            selected = self._cell == (cell.row, cell.col)
            pen = pg.mkPen(CELL_COLOURS[k % len(CELL_COLOURS)], width=3 if selected else 1.3)
            self.error_curves[cell.label] = plot.plot(
                steps, positive(cell.errors), pen=pen, connect="finite", name=cell.label
            )
        # a valley to mark only where the backward is right: a wrong one's error is flat
        best = steps.index(b.best_eps) if b.best_eps in steps and b.verdict not in NO_VALLEY else None
        anchor = [e if e is not None and math.isfinite(e) and e > 0 else None for e in b.errors]
        if best is not None and anchor[best] is not None:
            for slope, label in ((2, "slope 2: truncation"), (-1, "slope −1: round-off")):
                xs, ys = reference_line(steps, anchor, slope, best)
                self.error_curves[label] = plot.plot(xs, ys, pen=REFERENCE_PEN, name=label)
            plot.addItem(pg.InfiniteLine(math.log10(b.best_eps), angle=90, pen=BEST_PEN))
        plot.addItem(pg.InfiniteLine(math.log10(sweep.eps), angle=90, pen=EPS_PEN))
        entries = [(item.opts["pen"], item.name() or label) for label, item in self.error_curves.items()]
        entries.append((EPS_PEN, f"check's eps {sweep.eps:g}"))
        if best is not None:
            entries.append((BEST_PEN, f"best eps {b.best_eps:g}"))
        self.error_legend.setText(legend_html(entries))
        self._fit_range(plot, steps, [b.errors, *[c.errors for c in b.cells]])

    def _draw_remainder(self, b: BlockSweep | None) -> None:
        plot = self.remainder_plot
        plot.clear()
        self.remainder_legend.setText("")
        self.remainder_curves = {}
        sweep = self._sweep
        if sweep is None or b is None:
            return
        steps = sweep.steps
        self.remainder_curves["remainder"] = plot.plot(
            steps,
            positive(b.remainder),
            pen=pg.mkPen(REMAINDER_COLOUR, width=3),
            symbol="o",
            symbolSize=6,
            symbolBrush=REMAINDER_COLOUR,
            symbolPen=None,
            connect="finite",
            name="remainder",
        )
        self.remainder_curves["curvature"] = plot.plot(
            steps,
            positive(b.curvature),
            pen=pg.mkPen(CURVATURE_COLOUR, width=1.5, style=Qt.PenStyle.DashLine),
            connect="finite",
            name="second difference",
        )
        values = positive(b.remainder)
        clean = [k for k, v in enumerate(values) if np.isfinite(v) and v > 10 * b.floor]
        if clean:
            at = clean[0]  # anchor the references at the largest clean step
            for slope, label in ((2, "slope 2: J right"), (1, "slope 1: J wrong")):
                xs, ys = reference_line(steps, list(values), slope, at)
                pen = REFERENCE_PEN if slope == 2 else WRONG_REFERENCE_PEN
                self.remainder_curves[label] = plot.plot(xs, ys, pen=pen, name=label)
        if b.floor > 0:
            self.remainder_curves["floor"] = plot.plot(
                [min(steps), max(steps)], [b.floor, b.floor], pen=FLOOR_PEN, name="round-off level (estimated)"
            )
        self.remainder_legend.setText(
            legend_html([(item.opts["pen"], item.name() or label) for label, item in self.remainder_curves.items()])
        )
        self._fit_range(plot, steps, [b.remainder, b.curvature, [b.floor]])

    @staticmethod
    def _fit_range(plot: pg.PlotItem, steps: list[float], series: list[list[float] | None]) -> None:
        """Explicit ranges (log10 units): every step, and the curves' values with a margin."""
        values = np.concatenate([positive(s) for s in series if s is not None] or [np.array([1.0])])
        values = values[np.isfinite(values)]
        low, high = (float(values.min()), float(values.max())) if values.size else (1e-16, 1.0)
        bottom, top = math.log10(low) - 0.5, math.log10(high) + 0.5
        if top - bottom < MIN_DECADES:
            middle = (top + bottom) / 2
            bottom, top = middle - MIN_DECADES / 2, middle + MIN_DECADES / 2
        plot.setXRange(math.log10(min(steps)), math.log10(max(steps)), padding=0.04)
        plot.setYRange(bottom, top, padding=0)

    # the user's actions out ---------------------------------------------------------------------

    def _on_block_combo_changed(self, index: int) -> None:
        data = self.block_combo.itemData(index)
        if data is None:
            return
        self._block = tuple(data)
        self._cell = None
        self._show()
        self.block_changed.emit(*self._block)

    def _on_rerun_clicked(self) -> None:
        if self._sweep is not None and self._sweep.best_eps is not None:
            self.rerun_at_eps.emit(float(self._sweep.best_eps))

    def _on_redraw_clicked(self) -> None:
        if self._sweep is not None:
            self.redraw_requested.emit(jitter_for(self._sweep.eps))

    def _on_sweep_clicked(self) -> None:
        if self._block != OVERALL:
            self.sweep_requested.emit(self._block)
