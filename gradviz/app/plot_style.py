"""What every pyqtgraph plot of the window shares: plain tick labels that never collide, ink and
fonts from the theme, and texts that fall back to a shorter wording when the long one does not fit.

pyqtgraph picks tick spacings from the axis length alone, so at 11 pt a 130-pixel axis gets
"0 100 200 300" run together, and it writes small numbers with an SI factor ("-500 0 500
(x0.001)"). Here the spacing is chosen from the width of the labels themselves, and values are
written as they are: "-0.5 0 0.5", "2e-06".
"""

from __future__ import annotations

import math
from types import MethodType

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF

from gradviz.app.theme import Theme

NICE = (1.0, 2.0, 2.5, 5.0, 10.0)
OVERHANG = 10  # px a tick label may reach past the end of a horizontal axis (the label of cell 0)


def nice_spacing(raw: float, *, integer: bool = False) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k that is at least ``raw`` (whole, at least 1, for whole numbers)."""
    if not math.isfinite(raw) or raw <= 0:
        return 1.0
    if integer:  # less than one cell apart would write the same whole number twice
        raw = max(raw, 1.0)
    power = 10.0 ** math.floor(math.log10(raw))
    for m in NICE:
        spacing = power * m
        if spacing >= raw * (1 - 1e-9) and (not integer or float(spacing).is_integer()):
            return max(1.0, spacing) if integer else spacing
    return 10 * power


def tick_text(value: float, spacing: float, *, integer: bool = False) -> str:
    """A tick label: whole numbers as such, others in at most three significant figures, and a
    value that is zero but for round-off as 0 (never -0)."""
    if integer:
        return str(int(np.rint(value)))
    if abs(value) < abs(spacing) * 1e-6:
        return "0"
    return f"{value:.3g}"


def _tick_strings(self, values, scale, spacing):
    return [tick_text(v * scale, spacing * scale, integer=self._whole_numbers) for v in values]


def _tick_spacing(self, minVal, maxVal, size):
    span = abs(maxVal - minVal)
    if span == 0 or size <= 1:
        return []
    metrics = QFontMetricsF(self.style.get("tickFont") or self.font())
    if self.orientation not in ("bottom", "top"):
        fits = max(2, int(size // (1.8 * metrics.height())))  # at least two intervals: one label inside
        return [(nice_spacing(span / fits, integer=self._whole_numbers), 0.0)]
    # widen the spacing until the widest label it writes, and an em between labels, fit: the labels
    # of the spacing itself ("-0.9"), not of a guess ("-1"), which may be narrower
    low, em = min(minVal, maxVal), metrics.horizontalAdvance("M")
    spacing = nice_spacing(span / max(2, size // em), integer=self._whole_numbers)
    while span / spacing > 2:
        first = math.ceil(low / spacing) * spacing
        values = first + spacing * np.arange(min(int(span / spacing) + 1, 64))
        width = max(metrics.horizontalAdvance(tick_text(v, spacing, integer=self._whole_numbers)) for v in values)
        if spacing / span * size >= width + em:
            break
        spacing = nice_spacing(spacing * (1 + 1e-6), integer=self._whole_numbers)
    return [(spacing, 0.0)]


def plain_ticks(axis: pg.AxisItem, *, whole_numbers: bool = False) -> pg.AxisItem:
    """Give ``axis`` labels that do not collide and no SI factor (the unit is in the caption)."""
    axis._whole_numbers = whole_numbers
    axis.enableAutoSIPrefix(False)
    axis.tickSpacing = MethodType(_tick_spacing, axis)
    axis.tickStrings = MethodType(_tick_strings, axis)
    if axis.orientation in ("bottom", "top"):
        axis.setStyle(hideOverlappingLabels=OVERHANG)
    return axis


def style_axis(axis: pg.AxisItem, theme: Theme, *, tick_points: float = 11) -> None:
    """Dark ink on white at the theme's size and line width."""
    axis.setPen(pg.mkPen(theme.ink, width=theme.line))
    axis.setTextPen(theme.ink)
    axis.setTickFont(theme.font(tick_points))
    axis.picture = None  # redraw with the new font
    axis.update()


def set_axis_label(axis: pg.AxisItem, text: str, theme: Theme, *, points: float = 12) -> None:
    axis.setLabel(text, color=theme.ink, **{"font-size": f"{theme.pt(points)}pt"})
    axis.resizeEvent()  # pyqtgraph centres the label only on a resize: a new text stays off-centre


def text_width(text: str, points: int, *, bold: bool = False) -> float:
    """Width in pixels of one line of ``text`` at ``points``."""
    font = QFont()
    font.setPointSize(points)
    font.setBold(bold)
    return QFontMetricsF(font).horizontalAdvance(text)


def fitting(options: tuple[str, ...], room: float, points: int, *, bold: bool = False) -> str:
    """The first of ``options`` (longest first) that fits in ``room`` pixels, else the last one."""
    for text in options:
        if text_width(text, points, bold=bold) <= room:
            return text
    return options[-1]
