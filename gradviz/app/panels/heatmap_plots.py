"""The three heatmaps of one Jacobian block (analytic, numerical, |analytic − numerical|) with
their colour bars, as one pyqtgraph layout: the views are linked for zoom and pan, one colour bar
drives analytic and numerical (equal colours mean equal values), the error map has its own.
It draws a block's display prep (``app.display.BlockDisplay``) at the pooling the zoom needs, frames
the highlighted cell, says which cell is under the mouse and exports its two figures; which block
and cell to show is the Jacobian panel's business.

The colour bars stand in a column right of the maps, so the maps get the height. Cells are square by default (the views' aspect is locked, so a 900x900 block is drawn square
and a 40x8 block tall); ``set_square_cells(False)`` lets them stretch to fill the views. Titles,
axis labels and captions take the longest wording that fits their room.
"""

from __future__ import annotations

import itertools
from types import MethodType

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, QTimer

from gradviz.app.display import BlockDisplay
from gradviz.app.figures import DEFAULT_SIZE, export_figure
from gradviz.app.panels.heatmap_items import CellAxis, CellFrame, RectOutlines, let_title_shrink
from gradviz.app.plot_style import OVERHANG, plain_ticks, set_axis_label, style_axis
from gradviz.app.theme import ViewSettings
from gradviz.render.pooling import ERROR_MAP, VALUE_MAP

TITLES = (
    ("Analytic (backward)", "Analytic"),
    ("Numerical (finite diff.)", "Numerical"),
    ("Error |A − N|", "|A − N|"),
)
ROW_LABELS = ("output element (row)", "row (output)", "row")
COL_LABELS = ("input element (col)", "col (input)", "col")
VALUE_CAPTIONS = ("∂out/∂in: one scale for analytic and numerical", "∂out/∂in, analytic and numerical", "∂out/∂in")
ROW_BAND = (255, 170, 0)
TITLE_PT, LABEL_PT, TICK_PT = 13, 11, 11
PLOT_MIN_HEIGHT = 120  # px of a heatmap with its title and axes: some 40 px of cells at any scale
BAR_THICKNESS = 14  # px of a colour bar's colours
NUDGE = 5  # px pyqtgraph moves a vertical axis's caption outwards


def view_note(factor: int, n_failing: int, outlined: bool) -> tuple[str, str]:
    """(short note, its tooltip) on how the maps are drawn at this zoom: pooled, or with failing
    cells too many to outline; ('', '') when every cell is drawn as itself."""
    notes, tips = [], []
    if factor > 1:
        notes.append(f"{factor}×{factor} cells a pixel")
        tips.append(
            f"Downsampled: each pixel shows the largest |value| of {factor}×{factor} cells. "
            "Zoom in (mouse wheel) for single cells."
        )
    if n_failing and not outlined:
        notes.append("failing cells not outlined")
        tips.append(f"{n_failing:,} failing cells: too many to outline at this zoom.")
    return " · ".join(notes) + (": zoom in" if factor > 1 else ""), " ".join(tips)


def share_row_axis_width(axes: list[pg.AxisItem]) -> None:
    """Every row axis as wide as the widest wants to be (the first also holds the words "row
    (output)"): the three views are then as wide as one another, as linked views with square
    cells must be. pyqtgraph sizes each axis by the widest tick label it has drawn so far."""

    def update_width(_axis) -> None:
        first = axes[0]
        width = max(axis.textWidth for axis in axes) + first.style["tickTextOffset"][0]
        width += max(0, first.style["tickLength"])
        if first.label.isVisible():
            width += first.label.boundingRect().height() * 0.8  # as pyqtgraph counts it
        for axis in axes:
            axis.setMaximumWidth(width)
            axis.setMinimumWidth(width)
            axis.picture = None

    for axis in axes:
        axis._updateWidth = MethodType(update_width, axis)


def room_for_caption(axis: pg.AxisItem) -> None:
    """A colour bar's axis is 45 px wide whatever its labels ("-1.5e-05" does not fit), and an axis
    sized by its labels reserves 0.8 of its caption's height but draws it at its full height, over
    the tick labels by a few pixels: sized by the labels, with all of the caption's height."""
    update = axis._updateWidth

    def update_width(self) -> None:
        update()
        if self.fixedWidth is None and self.label.isVisible():
            width = self.maximumWidth() + 0.25 * self.label.boundingRect().height() + NUDGE
            self.setMaximumWidth(width)
            self.setMinimumWidth(width)

    axis._updateWidth = MethodType(update_width, axis)
    axis.setWidth(None)


class HeatmapPlots(pg.GraphicsLayoutWidget):
    """Analytic | numerical | error views over two colour bars."""

    def __init__(self, view: ViewSettings) -> None:
        super().__init__()
        self.view = view
        self.setBackground("w")
        self.setMinimumHeight(PLOT_MIN_HEIGHT)
        self._shown_texts: dict = {}  # (text, room) each title, axis label and caption was fitted to
        self._titles = TITLES  # each map's title, longest wording first (the forward mode has its own)
        self._square = True
        self._shape: tuple[int, int] | None = None  # (rows, cols) drawn
        self._cells = QRectF()  # where the images lie, in cell coordinates
        self._build_plots()
        self.set_square_cells(True)
        self._fit_timer = QTimer(self, singleShot=True, interval=0)
        self._fit_timer.timeout.connect(self._fit_texts)
        for plot in self.plot_items:
            plot.getViewBox().sigResized.connect(self._fit_timer.start)

    def _build_plots(self) -> None:
        self.analytic_image, self.numerical_image, self.error_image = images = [
            pg.ImageItem(axisOrder="row-major") for _ in TITLES
        ]
        # plots and colour bars in separate rows of their own, so the three plots get equal widths:
        # linked views of unequal sizes would disagree on the range
        # no margins around the maps: at 1280x720 every pixel of height is a pixel of cells
        self.ci.setContentsMargins(0, 2, 0, 0)
        plot_row = self.addLayout(row=0, col=0)
        plot_row.setContentsMargins(0, 0, NUDGE + 1, 0)  # the bars' captions reach NUDGE px past their axes
        self.plot_row = plot_row
        self.plot_items: list[pg.PlotItem] = []
        self.highlight_rects: list[CellFrame] = []
        for column, image in enumerate(images):
            axes = {name: plain_ticks(CellAxis(name), whole_numbers=True) for name in ("bottom", "left")}
            plot = plot_row.addPlot(row=0, col=column, axisItems=axes)
            let_title_shrink(plot)
            plot.setPreferredWidth(400)  # not the title's width: the three views must be equal
            plot.setMinimumHeight(PLOT_MIN_HEIGHT)  # shrinks, but never to axes around nothing
            plot_row.layout.setColumnStretchFactor(column, 1)
            plot.invertY(True)  # row 0 at the top, as the matrix is written
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.getViewBox().setBackgroundColor("#d9d9d9")  # grey margins: white cells stay visible
            plot.addItem(image)
            if column > 0:
                plot.setXLink(self.plot_items[0])
                plot.setYLink(self.plot_items[0])
            rect = CellFrame()
            rect.setZValue(10)
            rect.hide()
            plot.addItem(rect, ignoreBounds=True)
            self.highlight_rects.append(rect)
            self.plot_items.append(plot)
        # analytic and numerical stay clean, so their colours compare directly
        share_row_axis_width([plot.getAxis("left") for plot in self.plot_items])
        self.failing_outline = RectOutlines()
        self.failing_outline.setZValue(6)
        self.plot_items[2].addItem(self.failing_outline, ignoreBounds=True)
        self.failing_outlines = [self.failing_outline]
        # the rows one backward call fills, marked on the analytic map during the step-through
        self.row_band = pg.LinearRegionItem(
            orientation="horizontal", movable=False, brush=pg.mkBrush(*ROW_BAND, 60), pen=pg.mkPen(ROW_BAND, width=2)
        )
        self.row_band.setZValue(8)
        self.row_band.hide()
        self.plot_items[0].addItem(self.row_band, ignoreBounds=True)

        # the colour bars stand in one column right of the maps, the analytic/numerical one above
        # the error one: below the maps they would take the height the cells need
        self.bar_column = plot_row.addLayout(row=0, col=3)
        self.value_bar = pg.ColorBarItem(
            colorMap=VALUE_MAP, width=BAR_THICKNESS, interactive=False, orientation="vertical", colorMapMenu=False
        )
        self.value_bar.setImageItem([self.analytic_image, self.numerical_image])
        self.error_bar = pg.ColorBarItem(
            colorMap=ERROR_MAP, width=BAR_THICKNESS, interactive=False, orientation="vertical", colorMapMenu=False
        )
        self.error_bar.setImageItem(self.error_image)
        for row, bar in enumerate((self.value_bar, self.error_bar)):
            plain_ticks(bar.axis)
            room_for_caption(bar.axis)
            self.bar_column.addItem(bar, row=row, col=0)
            self.bar_column.layout.setRowStretchFactor(row, 1)
        # the end labels of the two bars reach half a line past their ends: a line and a bit apart
        self.bar_column.layout.setVerticalSpacing(24)
        plot_row.layout.setColumnStretchFactor(3, 0)
        self._captions = {self.value_bar: VALUE_CAPTIONS, self.error_bar: ("|A − N|",)}
        # a bottom axis's last label reaches OVERHANG px past its end: room for it before the next
        # plot's row labels
        plot_row.layout.setHorizontalSpacing(OVERHANG + 12)

    # drawing a block ------------------------------------------------------------------------------

    def title_gaps(self) -> list[tuple[float, float]]:
        """(pixels between a map's title and the next one's, the titles' height): A+ stops
        before the titles run into each other."""
        rects = [p.titleLabel.item.mapRectToScene(p.titleLabel.item.boundingRect()) for p in self.plot_items]
        return [(b.left() - a.right(), a.height()) for a, b in itertools.pairwise(rects)]

    def view_pixels(self) -> tuple[float, float]:
        """(width, height) of one heatmap's view in pixels."""
        box = self.plot_items[0].getViewBox()
        return max(box.width(), 1.0), max(box.height(), 1.0)

    def wanted_factor(self, display: BlockDisplay) -> int:
        """The pooling the view's zoom needs: about one tile per screen pixel."""
        (x0, x1), (y0, y1) = self.plot_items[0].getViewBox().viewRange()
        width, height = self.view_pixels()
        ratio = self.devicePixelRatioF() or 1.0  # a 2x screen has twice the pixels to fill
        return display.factor_for((x1 - x0, y1 - y0), (width * ratio, height * ratio))

    def draw(self, display: BlockDisplay, factor: int, origin: tuple[int, int]) -> bool:
        """Analytic and numerical at pooling ``factor``, the block's first cell at (row, col)
        ``origin``, levels explicit; the failing cells outlined on the error map. False when
        they are too many to outline at this pooling."""
        r0, c0 = origin
        self._cells = QRectF(c0 - 0.5, r0 - 0.5, *display.extent(factor))  # cell (r, c) centred on (c, r)
        self.set_cells((r0, display.block.shape[0]), (c0, display.block.shape[1]))
        self.analytic_image.setImage(display.image("analytic", factor), autoLevels=False, rect=self._cells)
        self.numerical_image.setImage(display.image("numerical", factor), autoLevels=False, rect=self._cells)
        self.value_bar.setLevels(display.value_levels)
        outline = display.outline(factor)
        if outline is None:
            self.failing_outline.clear()
            return False
        x, y, w, h = outline
        self.failing_outline.set_rects(x + c0, y + r0, w, h)
        return True

    def draw_error(self, display: BlockDisplay, factor: int, *, log: bool, caption: str) -> None:
        """The error map, |A − N| or its log10, with its own bar, where ``draw`` put the others."""
        kind, levels = ("log_error", display.log_levels) if log else ("error", (0.0, display.error_top))
        # rect with the image: setRect alone scales by the size of the image it replaces
        self.error_image.setImage(display.image(kind, factor), autoLevels=False, rect=self._cells)
        self.error_bar.setLevels(levels)
        self.set_error_caption(caption)

    def highlight(self, cell: tuple[int, int] | None) -> None:
        """Frame ``cell`` (row, col) in all three maps; None: no frame."""
        for rect in self.highlight_rects:
            rect.setVisible(cell is not None)
            if cell is not None:
                rect.set_cell(*cell)

    def cell_at(self, pos: QPointF) -> tuple[int, int] | None:
        """(row, col) under the scene point ``pos`` in any of the three maps, or None."""
        for plot in self.plot_items:
            box = plot.getViewBox()
            if box.sceneBoundingRect().contains(pos):
                point = box.mapSceneToView(pos)
                return int(np.floor(point.y() + 0.5)), int(np.floor(point.x() + 0.5))
        return None

    # exports ----------------------------------------------------------------------------------------

    def figures(self) -> dict[str, dict]:
        """What ``figures.export_figure`` draws for each figure: the three maps with their bars,
        and the error map alone."""
        error_region = lambda: self.plot_items[2].sceneBoundingRect().united(self.error_bar.sceneBoundingRect())  # noqa: E731
        return {
            "jacobians": {"root": self.ci},
            "error_map": {"root": self.ci, "region": error_region, "layout_width": 3.0},
        }

    def export(self, name: str, path: str, *, size: tuple[int, int] = DEFAULT_SIZE, caption: str = "") -> None:
        """One figure ('jacobians' or 'error_map') as PNG, SVG or PDF (by ``path``'s suffix)."""
        boxes = [plot.getViewBox() for plot in self.plot_items]
        ranges = [box.viewRange() for box in boxes]  # square cells widen a range to fit a new size
        data = self.analytic_image.mapRectToParent(self.analytic_image.boundingRect())
        (x0, x1), (y0, y1) = ranges[0]
        if x0 <= data.left() and data.right() <= x1 and y0 <= data.top() and data.bottom() <= y1:
            # the whole block on screen: the figure frames the block itself, whatever margins the
            # window's shape left around it (so two exports of one block are the same picture)
            boxes[0].setRange(rect=data, padding=0)
        try:
            export_figure(path, size=size, caption=caption, **self.figures()[name])
        finally:
            for box, (x_range, y_range) in zip(boxes, ranges):  # so the next export starts alike
                box.setRange(xRange=x_range, yRange=y_range, padding=0)

    # the look ----------------------------------------------------------------------------------------

    def set_square_cells(self, square: bool) -> None:
        """Square cells (locked aspect) or cells stretched to fill the views. Only the first view is
        locked: the others follow its range through their links (a lock on each, with links both
        ways, would widen the range a little on every exchange)."""
        self._square = square
        self.plot_items[0].setAspectLocked(square, ratio=1)

    def set_cells(self, rows: tuple[int, int] | None, cols: tuple[int, int] | None) -> None:
        """The (first, count) of the rows and of the columns drawn: the axes label those only.
        None: label whatever is in view (nothing is drawn)."""
        self._shape = None if rows is None or cols is None else (rows[1], cols[1])
        for plot in self.plot_items:
            plot.getAxis("left").set_cells(*(rows or (None,)))
            plot.getAxis("bottom").set_cells(*(cols or (None,)))

    def square_cells(self) -> bool:
        return self._square

    def wanted_height(self) -> float | None:
        """This widget's height at which square cells of its width fill the views' height: any
        taller leaves grey bands above and below the block. None when the cells stretch or
        nothing is drawn. A block too tall to fit wants more than there is (its views are then
        wider than it, which maps side by side cannot help)."""
        if not self._square or self._shape is None:
            return None
        rows, cols = self._shape
        box = self.plot_items[0].getViewBox()
        needed = box.width() * rows / cols  # the block's height at the view's width, padding alike
        return max(float(PLOT_MIN_HEIGHT), self.height() - box.height() + needed)

    def set_titles(self, titles: tuple[tuple[str, ...], ...]) -> None:
        """The three maps' titles, each from its longest wording to its shortest."""
        if titles != self._titles:
            self._titles = titles
            for column in range(len(titles)):
                self._shown_texts.pop(("title", column), None)  # fitted to other words
            self._fit_texts()

    def set_error_caption(self, caption: str) -> None:
        self._captions[self.error_bar] = (caption,)
        self._fit_texts()

    def apply_theme(self) -> None:
        """Axes, frames and outlines at the theme's sizes and line widths."""
        theme = self.view.theme
        for plot in self.plot_items:
            for name in ("bottom", "left"):
                style_axis(plot.getAxis(name), theme, tick_points=TICK_PT)
        for bar in (self.value_bar, self.error_bar):
            style_axis(bar.axis, theme, tick_points=TICK_PT)
        for rect in self.highlight_rects:
            rect.widths = (7.0, 3.0) if theme.high_contrast else (5.0, 2.0)
            rect.update()
        self.failing_outline.width = 2.5 if theme.high_contrast else 1.5
        self.failing_outline.update()
        self._shown_texts.clear()
        self._fit_texts()

    def _fit(self, key, options: tuple[str, ...], room: float, apply, measure) -> None:
        """Show the longest of ``options`` whose drawn width (``measure()`` after ``apply(text)``)
        fits in ``room`` pixels; nothing is redrawn while the room and the choice stay the same."""
        if self._shown_texts.get(key, (None, None))[1] == round(room):
            return
        for text in options:
            apply(text)
            if measure() <= room:
                break
        self._shown_texts[key] = (text, round(room))

    def _fit_texts(self) -> None:
        """Titles, axis labels and colour-bar captions in the longest wording that fits the room."""
        theme = self.view.theme
        ink = theme.ink
        title_pt = theme.pt(TITLE_PT)
        for column, (plot, titles) in enumerate(zip(self.plot_items, self._titles)):
            # centred over the plot: wider than the view, it would run over the first row's label
            axis = plot.getAxis("left")
            self._fit(
                ("title", column),
                titles,
                plot.width() - 2 * axis.width() - 8,
                lambda t, p=plot: p.setTitle(t, size=f"{title_pt}pt", color=ink, bold=True),
                lambda p=plot: p.titleLabel.item.boundingRect().width(),
            )
            view = plot.getViewBox()
            bottom = plot.getAxis("bottom")
            self._fit(
                ("bottom", column),
                COL_LABELS,
                view.width() - 4,
                lambda t, a=bottom: set_axis_label(a, t, theme, points=LABEL_PT),
                lambda a=bottom: a.label.boundingRect().width(),
            )
            left = plot.getAxis("left")
            if column == 0:
                self._fit(
                    ("left", 0),
                    ROW_LABELS,
                    view.height() - 4,
                    lambda t, a=left: set_axis_label(a, t, theme, points=LABEL_PT),
                    lambda a=left: a.label.boundingRect().width(),
                )
            elif left.label.isVisible():
                left.showLabel(False)
        for bar in (self.value_bar, self.error_bar):
            self._fit(
                ("caption", id(bar), self._captions[bar]),
                self._captions[bar],
                bar.height() - 8,
                lambda t, b=bar: set_axis_label(b.axis, t, theme, points=LABEL_PT),
                lambda b=bar: b.axis.label.boundingRect().width(),
            )
