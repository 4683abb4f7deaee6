"""The Why? panel's two log-log figures: colours, pens, the plot with its legend below, and the
display prep the panel needs (reference lines, log-safe values, explicit ranges).

Split from ``why_panel`` so the panel keeps to its layout and its signals. Titles and axis labels
are short on purpose: the Why? dock is a tab beside the memory study, about 440 px wide on a
1920-pixel screen, and a pyqtgraph title or axis label longer than its plot is cut, not wrapped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QPen
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from gradviz.app.panels.lazy_page import LazyPage
from gradviz.schema.sweep import BlockSweep, SweepResult, Verdict

INK = "#222"
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
MIN_DECADES = 4  # a y range never narrower than this: a flat curve stays a flat line, with decade labels
TITLE_SIZE = "12pt"
LABEL_SIZE = "10pt"
ERROR_TITLE = "Jacobian error vs eps"
REMAINDER_TITLE = "Taylor remainder vs h"
ERROR_Y = "max |numerical − analytic|"
REMAINDER_Y = "|Taylor remainder|"
REMAINDER_TIP = "Along a random direction v, with random weights w: |w·(f(x+hv) − f(x)) − h wᵀJv| against h"
FIGURE_MIN_WIDTH = 280  # the title, the left axis (76 px) and a few decades of eps
FIGURE_MIN_HEIGHT = 300  # the y axis's label (about 190 px at 10 pt) fits beside the plot


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


def set_title(plot: pg.PlotItem, title: str) -> None:
    plot.setTitle(title, size=TITLE_SIZE, color=INK, bold=True)


def _style(plot: pg.PlotItem, title: str, x_label: str, y_label: str, font: QFont) -> None:
    set_title(plot, title)
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
        axis.setLabel(label, color=INK, size=LABEL_SIZE)
    plot.getAxis("left").setStyle(maxTextLevel=0)  # label the decades only: minor labels pile up
    plot.getAxis("left").setWidth(76)  # tick labels such as 0.0001 and the axis title side by side


def plot_with_legend_below(title: str, x_label: str, y_label: str, font: QFont) -> tuple[QWidget, LazyPage, QLabel]:
    """A white plot with its legend under it (wrapped text), where it never hides a curve. The
    plot is built when the figure is first on screen or drawn into (``LazyPage``): the Why? dock
    is a tab behind the memory study at start."""

    def build() -> pg.PlotWidget:
        plot = pg.PlotWidget(background="w")
        _style(plot.getPlotItem(), title, x_label, y_label, font)
        plot.setMinimumSize(FIGURE_MIN_WIDTH, FIGURE_MIN_HEIGHT)
        return plot

    page = LazyPage(build)
    page.setMinimumSize(FIGURE_MIN_WIDTH, FIGURE_MIN_HEIGHT)
    legend = QLabel()
    legend.setWordWrap(True)
    legend.setTextFormat(Qt.TextFormat.RichText)
    legend.setStyleSheet(f"background: white; color: {INK}; padding: 0 6px 4px 6px")
    legend.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    figure = QWidget()
    figure.setStyleSheet("background: white")
    layout = QVBoxLayout(figure)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    layout.addWidget(page, 1)
    layout.addWidget(legend)
    return figure, page, legend


LEGEND_ROW = 4  # a PlotItem's grid: title 0, top axis 1, view 2, bottom axis 3; the legend below


@contextmanager
def legend_in_figure(plot: pg.PlotItem, curves: dict[str, pg.PlotDataItem]) -> Iterator[pg.LegendItem]:
    """While exporting: the curves' legend drawn as part of ``plot``, in a row under its axis
    (in the window it is a label under the plot, which a drawing of the plot does not include),
    so the figure says which line is which and the legend hides no curve."""
    legend = pg.LegendItem(labelTextColor=INK, labelTextSize=LABEL_SIZE, colCount=max(1, min(3, len(curves))))
    for label, item in curves.items():
        legend.addItem(item, item.name() or label)
    plot.layout.addItem(legend, LEGEND_ROW, 1)
    try:
        yield legend
    finally:
        plot.layout.removeItem(legend)
        if legend.scene() is not None:
            legend.scene().removeItem(legend)


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


def fit_range(plot: pg.PlotItem, steps: list[float], series: list[list[float] | None]) -> None:
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


NO_VALLEY = (Verdict.BACKWARD_WRONG, Verdict.NON_DIFFERENTIABLE, Verdict.INCONCLUSIVE)  # no eps fixes these


def slopes_text(b: BlockSweep, sweep: SweepResult) -> str:
    """The measured slopes behind the verdict, in one line of text."""

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
