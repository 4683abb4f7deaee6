"""The pieces drawn over and around the Jacobian heatmaps: the frame of the highlighted cell and the
outlines of the failing cells, both in cell coordinates with cosmetic pens (an export at any size
draws them where the window does), and the axes that label only rows and columns that exist."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainterPath

FAIL_RGB = (230, 20, 60)


class CellFrame(pg.GraphicsObject):
    """The highlighted cell: a black frame inside a white one, visible on every colour of both maps."""

    def __init__(self) -> None:
        super().__init__()
        self._rect = QRectF(-0.5, -0.5, 1, 1)
        self.widths = (5.0, 2.0)

    def set_cell(self, row: int, col: int) -> None:
        self.prepareGeometryChange()
        self._rect = QRectF(col - 0.5, row - 0.5, 1, 1)
        self.update()

    def rect(self) -> QRectF:
        return self._rect

    def boundingRect(self) -> QRectF:
        dx, dy = self.pixelVectors()  # the pens are in pixels: pad by a few of them
        if dx is None:
            return QRectF(self._rect)
        px, py = 4 * math.hypot(dx.x(), dx.y()), 4 * math.hypot(dy.x(), dy.y())
        return self._rect.adjusted(-px, -py, px, py)

    def viewTransformChanged(self) -> None:
        self.prepareGeometryChange()  # the padding is in pixels: zooming changes it
        super().viewTransformChanged()

    def paint(self, painter, *_args) -> None:
        for colour, width in zip(("w", "k"), self.widths):
            pen = pg.mkPen(colour, width=width)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.drawRect(self._rect)


class RectOutlines(pg.GraphicsObject):
    """Red outlines of the failing cells (or tiles): one path in cell coordinates drawn with a
    cosmetic pen, so an export at any size draws them where the window does."""

    def __init__(self) -> None:
        super().__init__()
        self._path = QPainterPath()
        self._rects: tuple[np.ndarray, ...] = (np.zeros(0),) * 4
        self.width = 1.5

    def set_rects(self, x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray) -> None:
        self.prepareGeometryChange()
        self._rects = (np.asarray(x, float), np.asarray(y, float), np.asarray(w, float), np.asarray(h, float))
        path = QPainterPath()
        for x0, y0, w0, h0 in zip(*self._rects):
            path.addRect(QRectF(float(x0), float(y0), float(w0), float(h0)))
        self._path = path
        self.update()

    def clear(self) -> None:
        self.set_rects(*(np.zeros(0),) * 4)

    def rects(self) -> tuple[np.ndarray, ...]:
        """(x, y, width, height) of every outline, in cell coordinates."""
        return self._rects

    def cells(self) -> list[tuple[int, int]]:
        """(row, col) of the top-left cell of every outline."""
        x, y = self._rects[0], self._rects[1]
        return [(int(np.rint(r + 0.5)), int(np.rint(c + 0.5))) for r, c in zip(y, x)]

    def boundingRect(self) -> QRectF:
        return self._path.boundingRect().adjusted(-0.5, -0.5, 0.5, 0.5)

    def paint(self, painter, *_args) -> None:
        pen = pg.mkPen(FAIL_RGB, width=self.width)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._path)


class CellAxis(pg.AxisItem):
    """An axis of a heatmap that labels only the block's own rows (or columns). With square cells a
    view is mostly taller (or wider) than its block, and pyqtgraph labels the whole view: "-800 …
    1800" beside a 900-row block reads as rows that do not exist."""

    def __init__(self, orientation: str) -> None:
        super().__init__(orientation)
        self.cells: tuple[float, float] | None = None  # first and last index labelled; None: any

    def set_cells(self, first: int | None, count: int = 0) -> None:
        """Label indices ``first`` .. ``first + count - 1`` only; ``first`` None: label the view."""
        self.cells = None if first is None else (float(first), float(first + count - 1))
        self.picture = None  # pyqtgraph redraws its ticks only when its picture is gone
        self.update()

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:
        levels = super().tickValues(minVal, maxVal, size)
        if self.cells is None:
            return levels
        low, high = self.cells[0] - 1e-6, self.cells[1] + 1e-6
        return [(spacing, [v for v in values if low <= v <= high]) for spacing, values in levels]


def let_title_shrink(plot: pg.PlotItem) -> None:
    """A LabelItem makes its text's width its minimum on every resize. A maximum width of 0 wins
    over that (Qt ranks the maximum first), and centred in its cell the text stays over the plot:
    a narrow window clips a title, not the third plot."""
    plot.titleLabel.setMaximumWidth(0)
    plot.layout.setAlignment(plot.titleLabel, Qt.AlignmentFlag.AlignHCenter)
