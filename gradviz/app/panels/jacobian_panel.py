"""The Jacobian panel: analytic, numerical and |analytic − numerical| side by side.

One colour bar drives analytic and numerical, so equal colours mean equal values; the error
map has its own. Hovering any image highlights the same cell in all three and prints where the
cell comes from. The panel renders a ``CheckResult``; its display prep (float32 copies, levels,
pooled overviews) comes from ``gradviz.app.display``, made once per block so switching blocks
stays fast on 2000x2000 Jacobians.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.display import BlockDisplay, first_block_index
from gradviz.app.figures import save_png
from gradviz.schema.report import cell_readout
from gradviz.schema.results import BlockComparison, CheckResult

TITLES = ("Analytic (backward)", "Numerical (finite diff.)", "Error |A − N|")
VALUE_MAP = "CET-D1"  # diverging blue-white-red: the sign of a derivative matters
ERROR_MAP = "viridis"  # sequential: an error only grows
WORST_ZOOM = 32  # cells across when "Go to worst cell" zooms into a large block
EXPORT_WIDTH = 1920  # pixels: sharp on a lecture slide
EMPTY_TEXT = "No result yet: run a check to see its Jacobians."
FAIL_RGB = (230, 20, 60)
INK = "#222"


class _IndexAxis(pg.AxisItem):
    """Cell indices are whole numbers: drop the 0.5-step ticks pyqtgraph picks when zoomed in."""

    def tickValues(self, minVal, maxVal, size):
        levels = super().tickValues(minVal, maxVal, size)
        return [(spacing, [v for v in values if float(v).is_integer()]) for spacing, values in levels]


class _CellFrame(pg.GraphicsObject):
    """The highlighted cell: a black frame inside a white one, visible on every colour of both maps."""

    def __init__(self) -> None:
        super().__init__()
        self._rect = QRectF(-0.5, -0.5, 1, 1)

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
        for colour, width in (("w", 5), ("k", 2)):
            painter.setPen(pg.mkPen(colour, width=width))
            painter.drawRect(self._rect)


def _let_title_shrink(plot: pg.PlotItem) -> None:
    """A LabelItem makes its text's width its minimum on every resize. A maximum width of 0 wins
    over that (Qt ranks the maximum first), and centred in its cell the text stays over the plot:
    a narrow window clips a title, not the third plot."""
    plot.titleLabel.setMaximumWidth(0)
    plot.layout.setAlignment(plot.titleLabel, Qt.AlignmentFlag.AlignHCenter)


def _style_axis(axis: pg.AxisItem, font: QFont) -> None:
    """Dark ink on the white background, ticks readable from the back of a lecture hall."""
    axis.setPen(INK)
    axis.setTextPen(INK)
    axis.setTickFont(font)


class JacobianPanel(QWidget):
    """Analytic | numerical | error heatmaps of one block, linked for zoom, pan and hover."""

    block_changed = Signal(int)  # index into result.blocks
    cellHovered = Signal(int, int)  # (row, col)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._result: CheckResult | None = None
        self._index = 0
        self._cell: tuple[int, int] | None = None
        self._displays: dict[int, BlockDisplay] = {}
        self._redraw_ms = 0.0
        self._full_res: bool | None = None  # the resolution the images were last drawn at
        self._zoom_guard = False
        self._cells = QRectF()  # where the images lie, in cell coordinates

        self.block_selector = QComboBox()
        self.block_selector.setToolTip("Which (output, input) block of the Jacobian to show")
        self.block_selector.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.log_scale = QCheckBox("log scale (error map)")
        self.log_scale.setToolTip("Colour the error map by log10 |analytic − numerical|")
        self.worst_button = QPushButton("Go to worst cell")
        self.readout = QLabel(EMPTY_TEXT)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setWordWrap(True)
        font = self.readout.font()
        font.setPointSize(font.pointSize() + 4)
        self.readout.setFont(font)

        self.plots = pg.GraphicsLayoutWidget()
        self.plots.setBackground("w")
        self.plots.setMinimumHeight(320)
        self._build_plots()

        controls = QHBoxLayout()
        controls.addWidget(self.block_selector)
        controls.addWidget(self.worst_button)
        controls.addStretch(1)
        controls.addWidget(self.log_scale)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(controls)
        layout.addWidget(self.plots, 1)
        layout.addWidget(self.readout)

        self.block_selector.currentIndexChanged.connect(self._on_block_selected)
        self.log_scale.toggled.connect(self._on_log_scale_changed)
        self.worst_button.clicked.connect(self.go_to_worst)
        # the views are linked, so the first one's range is everyone's
        self.plot_items[0].getViewBox().sigRangeChanged.connect(self._on_range_changed)
        # one readout per frame at most, however fast the mouse moves
        self._mouse_proxy = pg.SignalProxy(
            self.plots.scene().sigMouseMoved, rateLimit=60, slot=self._on_mouse_moved
        )
        self.set_result(None)

    def _build_plots(self) -> None:
        tick_font = QFont()
        tick_font.setPointSize(11)
        self.analytic_image, self.numerical_image, self.error_image = images = [
            pg.ImageItem(axisOrder="row-major", autoDownsample=True) for _ in TITLES
        ]
        self.failing_overlay = pg.ImageItem(axisOrder="row-major", autoDownsample=True)
        tint = np.zeros((256, 4), dtype=np.uint8)
        tint[:, :3] = FAIL_RGB
        tint[:, 3] = np.linspace(0, 70, 256).astype(np.uint8)  # downsampled fractions fade out
        self.failing_overlay.setLookupTable(tint)
        self.failing_overlay.setLevels((0.0, 1.0))
        self.failing_overlay.setZValue(5)

        # plots and colour bars in separate rows of their own, so the three plots get equal widths:
        # linked, aspect-locked views of unequal sizes would disagree on the range
        plot_row = self.plots.addLayout(row=0, col=0)
        bar_row = self.plots.addLayout(row=1, col=0)
        self.plot_items: list[pg.PlotItem] = []
        self.highlight_rects: list[_CellFrame] = []
        self.failing_outlines: list[pg.ScatterPlotItem] = []
        for column, (title, image) in enumerate(zip(TITLES, images)):
            plot = plot_row.addPlot(
                row=0,
                col=column,
                axisItems={"bottom": _IndexAxis("bottom"), "left": _IndexAxis("left")},
            )
            plot.setTitle(title, size="14pt", color=INK, bold=True)
            _let_title_shrink(plot)
            plot.setPreferredWidth(400)  # not the title's width: the three views must be equal
            plot_row.layout.setColumnStretchFactor(column, 1)
            plot.setLabel("bottom", "input element (col)", color=INK, **{"font-size": "12pt"})
            plot.setLabel("left", "output element (row)", color=INK, **{"font-size": "12pt"})
            for name in ("bottom", "left"):
                _style_axis(plot.getAxis(name), tick_font)
            plot.invertY(True)  # row 0 at the top, as the matrix is written
            plot.setAspectLocked(False)  # cells may be oblong: a 600x400 block then fills a wide, short view
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.getViewBox().setBackgroundColor("#d9d9d9")  # grey margins: white cells stay visible
            plot.addItem(image)
            if column > 0:
                plot.setXLink(self.plot_items[0])
                plot.setYLink(self.plot_items[0])
            if column == 2:  # analytic and numerical stay clean, so their colours compare directly
                outline = pg.ScatterPlotItem(
                    pxMode=False, symbol="s", size=1.0, brush=None, pen=pg.mkPen(FAIL_RGB, width=1.5)
                )
                outline.setZValue(6)
                plot.addItem(outline)
                self.failing_outlines.append(outline)
            rect = _CellFrame()
            rect.setZValue(10)
            rect.hide()
            plot.addItem(rect, ignoreBounds=True)
            self.highlight_rects.append(rect)
            self.plot_items.append(plot)
        self.plot_items[2].addItem(self.failing_overlay)

        self.value_bar = pg.ColorBarItem(
            colorMap=VALUE_MAP, interactive=False, orientation="horizontal", colorMapMenu=False
        )
        self.value_bar.setImageItem([self.analytic_image, self.numerical_image])
        self.error_bar = pg.ColorBarItem(
            colorMap=ERROR_MAP, interactive=False, orientation="horizontal", colorMapMenu=False
        )
        self.error_bar.setImageItem(self.error_image)
        for bar, label, column, span in (
            (self.value_bar, "∂out/∂in: one scale for analytic and numerical", 0, 2),
            (self.error_bar, "|A − N|", 1, 1),
        ):
            for name in ("left", "right", "top", "bottom"):
                _style_axis(bar.getAxis(name), tick_font)
            bar.getAxis("bottom").setLabel(label, color=INK, **{"font-size": "12pt"})
            bar_row.addItem(bar, row=0, col=column)
            bar_row.layout.setColumnStretchFactor(column, span)

    # public API -------------------------------------------------------------------------------

    def set_result(self, result: CheckResult | None, prepared: dict[int, BlockDisplay] | None = None) -> None:
        """Show a finished check (its first failing block); None clears the panel.

        ``prepared``: display prep made off the GUI thread by ``display.prepare_displays``.
        """
        self._result = result
        self._displays.clear()
        self._displays.update(prepared or {})
        self._cell = None
        self.block_selector.blockSignals(True)
        self.block_selector.clear()
        if result is not None:
            for block in result.blocks:
                mark = "✓" if block.passed else f"✗ {block.n_failing:,} failing"
                self.block_selector.addItem(f"{result.block_title(block)}   {mark}")
        self.block_selector.blockSignals(False)
        self.block_selector.setVisible(result is not None and len(result.blocks) > 1)
        if result is None or not result.blocks:
            self._clear()
            return
        self.set_block(first_block_index(result))

    def set_block(self, index: int) -> None:
        """Show block ``index`` of the current result, keeping the highlighted cell if it fits."""
        if self._result is None or not 0 <= index < len(self._result.blocks):
            return
        start = time.perf_counter()
        self._index = index
        block = self._result.blocks[index]
        display = self._display()
        self.block_selector.blockSignals(True)
        self.block_selector.setCurrentIndex(index)
        self.block_selector.blockSignals(False)

        rows, cols = block.shape
        for outline in self.failing_outlines:
            if display.outline is None:
                outline.clear()
            else:
                outline.setData(x=display.outline[0], y=display.outline[1])
        self._full_res = None
        self._zoom_guard = True  # draw once, after the range is set
        self.plot_items[0].getViewBox().setRange(QRectF(-0.5, -0.5, cols, rows), padding=0.02)
        self._zoom_guard = False
        self._draw_images()
        self.worst_button.setEnabled(block.worst is not None)
        self.worst_button.setToolTip(self._worst_tip(block))

        kept = self._cell if self._cell and self._cell[0] < rows and self._cell[1] < cols else None
        cell = kept or (None if block.passed else block.worst)
        if cell is None:
            self._set_highlight(None)
            self.readout.setText(f"{rows} x {cols} block: hover a cell to compare its values.")
        else:
            self._set_highlight(cell)
        self._redraw_ms = (time.perf_counter() - start) * 1000
        self.block_changed.emit(index)

    def current_block(self) -> BlockComparison | None:
        """The block on screen (the banner shows its hints)."""
        return self._result.blocks[self._index] if self._result and self._result.blocks else None

    def hover_cell(self, row: int, col: int) -> None:
        """Highlight a cell in all three plots and read it out, as the mouse does."""
        block = self.current_block()
        if block is None or not (0 <= row < block.shape[0] and 0 <= col < block.shape[1]):
            return
        self._set_highlight((row, col))
        self.cellHovered.emit(row, col)

    def highlighted_cell(self) -> tuple[int, int] | None:
        """(row, col) framed in all three plots, or None."""
        return self._cell

    def go_to_worst(self) -> None:
        """Highlight the worst cell; in a large block, zoom in around it so it can be seen."""
        block = self.current_block()
        if block is None or block.worst is None:
            return
        row, col = block.worst
        if max(block.shape) > 2 * WORST_ZOOM:
            half = WORST_ZOOM / 2
            self.plot_items[0].getViewBox().setRange(
                xRange=(col - half, col + half), yRange=(row - half, row + half), padding=0
            )
        self.hover_cell(row, col)

    def redraw_ms(self) -> float:
        """How long the last set_block took on the Python side (drawing happens on paint)."""
        return self._redraw_ms

    def export_png(self, path: str) -> None:
        """The three plots and their colour bars as one PNG, wide enough for a slide."""
        exporter = pyqtgraph.exporters.ImageExporter(self.plots.scene())
        exporter.parameters()["width"] = EXPORT_WIDTH
        save_png(exporter.export(toBytes=True), path)

    # internals --------------------------------------------------------------------------------

    def _clear(self) -> None:
        for image in (self.analytic_image, self.numerical_image, self.error_image, self.failing_overlay):
            image.clear()
        for outline in self.failing_outlines:
            outline.clear()
        self._set_highlight(None)
        self._full_res = None
        self.worst_button.setEnabled(False)
        self.worst_button.setToolTip("")
        self.readout.setText(EMPTY_TEXT)

    def _display(self) -> BlockDisplay:
        """The current block's display prep, made on its first visit."""
        if self._index not in self._displays:
            block = self._result.blocks[self._index]
            self._displays[self._index] = BlockDisplay(block, self._result.settings.atol)
        return self._displays[self._index]

    def _wants_full_res(self, display: BlockDisplay) -> bool:
        box = self.plot_items[0].getViewBox()
        (x0, x1), (y0, y1) = box.viewRange()
        return display.wants_full_res((x1 - x0, y1 - y0), (box.width(), box.height()))

    def _draw_images(self) -> None:
        """Hand the four images to pyqtgraph at the resolution the zoom needs; levels stay explicit."""
        display = self._display()
        full = self._wants_full_res(display)
        if full == self._full_res:
            return
        self._full_res = full
        cells = QRectF(-0.5, -0.5, *display.extent(full))  # cell (r, c) centred on (c, r)
        self.analytic_image.setImage(display.image("analytic", full), autoLevels=False, rect=cells)
        self.numerical_image.setImage(display.image("numerical", full), autoLevels=False, rect=cells)
        self.value_bar.setLevels(display.value_levels)
        self.failing_overlay.setImage(display.image("failing", full), autoLevels=False, rect=cells)
        self.failing_overlay.setLevels((0.0, 1.0))
        self._cells = cells
        self._draw_error()

    def _draw_error(self) -> None:
        display = self._display()
        if self.log_scale.isChecked():
            kind, levels, label = "log_error", display.log_levels, "log10 |A − N|"
        else:
            kind, levels, label = "error", (0.0, display.error_top), "|A − N|"
        # rect with the image: setRect alone scales by the size of the image it replaces
        self.error_image.setImage(
            display.image(kind, bool(self._full_res)), autoLevels=False, rect=self._cells
        )
        self.error_bar.setLevels(levels)
        self.error_bar.getAxis("bottom").setLabel(label, color=INK, **{"font-size": "12pt"})

    def _set_highlight(self, cell: tuple[int, int] | None) -> None:
        self._cell = cell
        for rect in self.highlight_rects:
            rect.setVisible(cell is not None)
            if cell is not None:
                rect.set_cell(*cell)
        block = self.current_block()
        if cell is not None and self._result is not None and block is not None:
            self.readout.setText(cell_readout(self._result, block, *cell))

    def _worst_tip(self, block: BlockComparison) -> str:
        if block.worst is None or self._result is None:
            return ""
        where = self._result.cell_label(block, *block.worst)
        verdict = "fails" if not block.passed else "within tolerance"
        return f"Largest |err|: {where} ({block.max_abs_error:.2g}, {verdict})"

    def _on_block_selected(self, index: int) -> None:
        self.set_block(index)

    def _on_log_scale_changed(self, _checked: bool) -> None:
        if self.current_block() is not None:
            self._draw_error()

    def _on_range_changed(self, *_args) -> None:
        if not self._zoom_guard and self.current_block() is not None:
            self._draw_images()

    def _on_mouse_moved(self, args: tuple) -> None:
        pos = args[0]
        block = self.current_block()
        if block is None:
            return
        for plot in self.plot_items:
            box = plot.getViewBox()
            if box.sceneBoundingRect().contains(pos):
                point: QPointF = box.mapSceneToView(pos)
                cell = (int(np.floor(point.y() + 0.5)), int(np.floor(point.x() + 0.5)))
                if cell != self._cell:
                    self.hover_cell(*cell)
                return
