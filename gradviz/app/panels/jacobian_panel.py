"""The Jacobian panel: analytic, numerical and |analytic − numerical| side by side.

One colour bar drives analytic and numerical, so equal colours mean equal values; the error
map has its own. Failing cells are outlined on the error map, never tinted, so every colour
matches its bar. Hovering any image highlights the same cell in all three and prints where the
cell comes from. A block with more cells than its view has pixels is drawn pooled (the largest
|value| of each tile, so a sparse diagonal stays visible) and the panel says so; zooming in
brings the cells back. A block too large to hold (``CheckResult.large_blocks``) is shown as what
was computed of it: its size, the failing cells its search found and whether the search finished;
regions of it computed on demand (``BlockRegion``) are drawn like a block, at their real row and
column indices, and kept until the next result.

The panel renders a ``CheckResult``; its display prep (float32 copies, levels, pooled images)
comes from ``gradviz.app.display``. It is a composition: ``HeatmapPlots`` (the three linked maps,
their bars, the cell frame, the exports), ``LargeBlockPage`` with ``LargeBlockRegions`` (a block
too large to hold and its computed regions), ``BlockOverview`` and ``ForwardSwitch``; the panel
itself chooses which block, region and cell to show.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QWidget,
)

from gradviz.app.display import BlockDisplay, first_block_index
from gradviz.app.figures import DEFAULT_SIZE, slide_size
from gradviz.app.panels.block_overview import BlockOverview
from gradviz.app.panels.box_layout import Stretch, column, row
from gradviz.app.panels.forward_view import ForwardSwitch
from gradviz.app.panels.heatmap_plots import HeatmapPlots, view_note
from gradviz.app.panels.jacobian_regions import LargeBlockRegions
from gradviz.app.panels.large_block_page import LargeBlockPage
from gradviz.app.panels.stale_note import StaleNote
from gradviz.app.theme import ViewSettings
from gradviz.schema.results import BlockComparison, BlockRegion, CheckResult, LargeBlock

if TYPE_CHECKING:
    from gradviz.app.state import CurrentResult, ShownRun

WORST_ZOOM = 32  # cells across when "Go to worst cell" zooms into a large block
EMPTY_TEXT = "No result yet: run a check to see its Jacobians."
STALE_OPACITY = 0.35
READOUT_PT = 12


class JacobianPanel(LargeBlockRegions, QWidget):
    """Analytic | numerical | error heatmaps of one block, linked for zoom, pan and hover."""

    block_changed = Signal(int)  # index into the block selector: result.blocks, then result.large_blocks
    cellHovered = Signal(int, int)  # (row, col)
    region_requested = Signal(object)  # schema.requests.Region: cells of a large block to compute
    region_cancelled = Signal()  # stop computing it

    def __init__(
        self, parent: QWidget | None = None, *, view: ViewSettings | None = None,
        current: CurrentResult | None = None, shown: ShownRun | None = None,
    ) -> None:  # fmt: skip
        """``current``: the check on screen, drawn whenever it changes; ``shown``: what was asked
        and what is shown, whose stale reason greys the maps."""
        super().__init__(parent)
        self.view = view if view is not None else ViewSettings(self)
        self.current = current
        self._result: CheckResult | None = None
        self._index = 0
        self._cell: tuple[int, int] | None = None
        self._displays: dict[int, BlockDisplay] = {}
        self._regions: dict[int, list[BlockRegion]] = {}  # computed regions per large block index
        self._region_index: dict[int, int] = {}  # which of them is on screen
        self._region_displays: dict[int, BlockDisplay] = {}  # by id of the region
        self._redraw_ms = 0.0
        self._factor: int | None = None  # the pooling the images were last drawn at
        self._zoom_guard = False
        self._rows: tuple[int, int] | None = None  # rows marked by the backward step-through
        self._stale = False
        self._widget_points = QApplication.font().pointSizeF()  # buttons and boxes at scale 1

        self.block_selector = QComboBox()
        self.block_selector.setToolTip("Which (output, input) block of the Jacobian to show")
        self.block_selector.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.block_selector.setMinimumContentsLength(10)
        self.worst_button = QPushButton("Go to worst cell")
        self.reset_button = QPushButton("Reset zoom")
        self.reset_button.setToolTip("Show the whole block again (or double-click a plot)")
        self.log_scale = QCheckBox("log scale")
        self.log_scale.setToolTip("Colour the error map by log10 |analytic − numerical|")
        self.stale_label = StaleNote()
        self.readout = QLabel(EMPTY_TEXT)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setWordWrap(True)
        self.view_note = QLabel("")  # in the toolbar row, short; the whole note is its tooltip
        self.view_note.hide()
        self.forward = ForwardSwitch()  # backward (vjp) | forward (jvp), for a result with forward blocks

        self.plots = HeatmapPlots(self.view)
        # the plots' parts, under the names the window, the exports and the tests use
        self.plot_items, self.highlight_rects = self.plots.plot_items, self.plots.highlight_rects
        self.analytic_image, self.numerical_image, self.error_image = (
            self.plots.analytic_image, self.plots.numerical_image, self.plots.error_image
        )
        self.value_bar, self.error_bar = self.plots.value_bar, self.plots.error_bar
        self.failing_outline, self.row_band = self.plots.failing_outline, self.plots.row_band
        self.square_cells = QCheckBox("square cells")
        self.square_cells.setChecked(True)
        self.square_cells.setToolTip("Draw every cell square; clear to stretch the cells to fill the plots")

        self.large_page = LargeBlockPage()
        self.large_summary, self.large_table = self.large_page.summary, self.large_page.table
        self.region_controls = self.large_page.region_controls
        # a large block's page above the heatmaps of its region; a block held in full: heatmaps only.
        # The page scrolls rather than make the panel taller than a small window's dock.
        self.large_scroll = QScrollArea()
        self.large_scroll.setWidgetResizable(True)
        self.large_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.large_scroll.setWidget(self.large_page)
        self.body = QSplitter(Qt.Orientation.Vertical)
        self.body.setChildrenCollapsible(False)
        self.body.addWidget(self.large_scroll)
        self.body.addWidget(self.plots)
        self.body.setStretchFactor(0, 0)
        self.body.setStretchFactor(1, 1)
        self.overview = BlockOverview()  # every block of the Jacobian, beside the one shown
        controls = row(
            self.block_selector, self.worst_button, self.reset_button, self.forward, self.view_note,
            Stretch(1), self.square_cells, self.log_scale,
        )  # fmt: skip
        middle = row(self.overview, (self.body, 1))
        column(controls, self.stale_label, (middle, 1), self.readout, parent=self, spacing=3)

        self.block_selector.currentIndexChanged.connect(self._on_block_selected)
        self.log_scale.toggled.connect(self._on_log_scale_changed)
        self.forward.mode_changed.connect(self._on_forward_mode_changed)
        self.worst_button.clicked.connect(self.go_to_worst)
        self.reset_button.clicked.connect(self.reset_zoom)
        self.region_controls.compute_requested.connect(self.request_region)
        self.region_controls.cancel_requested.connect(self.region_cancelled)
        self.region_controls.region_chosen.connect(self._on_region_chosen)
        self.overview.block_chosen.connect(self._on_block_selected)
        self.square_cells.toggled.connect(self._on_square_cells_changed)
        self.large_table.cellDoubleClicked.connect(self._on_found_cell_double_clicked)
        # the views are linked, so the first one's range is everyone's
        self.plot_items[0].getViewBox().sigRangeChanged.connect(self._on_range_changed)
        # one readout per frame at most, however fast the mouse moves
        self._mouse_proxy = pg.SignalProxy(
            self.plots.scene().sigMouseMoved, rateLimit=60, slot=self._on_mouse_moved
        )
        self.plots.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()
        self.set_result(None)
        if current is not None:
            current.changed.connect(self._on_result_changed)
        if shown is not None:
            shown.stale_changed.connect(self.set_stale)

    def _on_result_changed(self) -> None:
        self.set_result(self.current.result, self.current.displays)

    # public API -------------------------------------------------------------------------------

    def set_result(self, result: CheckResult | None, prepared: dict[int, BlockDisplay] | None = None) -> None:
        """Show a finished check (its first failing block); None clears the panel.

        ``prepared``: display prep made off the GUI thread by ``display.prepare_displays``.
        """
        result = self.forward.set_result(result)  # forward mode alone: its blocks are the ones drawn
        self._result = result
        self._displays.clear()
        self._displays.update(prepared or {})
        self._regions.clear()
        self._region_index.clear()
        self._region_displays.clear()
        self.region_controls.set_running(False)
        self.plots.set_titles(self.forward.titles())
        self._cell = None
        self._rows = None
        self._fill_block_list()
        if result is None or not (result.blocks or result.large_blocks):
            self._clear("No Jacobian to show: no input needs a gradient." if result is not None else EMPTY_TEXT)
            return
        if result.blocks:
            self.set_block(first_block_index(result))
        else:
            self.set_block(next((k for k, b in enumerate(result.large_blocks) if b.cells), 0))

    def _fill_block_list(self) -> None:
        """The block selector and the overview, each block marked as the comparison on screen
        (backward, or forward in forward mode) passes or fails."""
        result = self.forward.listed(self._result)
        self.block_selector.blockSignals(True)
        self.block_selector.clear()
        if result is not None:
            for block in result.blocks:
                mark = "✓" if block.passed else f"✗ {block.n_failing:,} failing"
                self.block_selector.addItem(f"{result.block_title(block)}   {mark}")
            for block in result.large_blocks:
                found = f"✗ {len(block.cells):,} found" if block.cells else "✓ none found"
                self.block_selector.addItem(f"{result.block_title(block)}   {found} (searched)")
        self.block_selector.setCurrentIndex(self._index if 0 <= self._index < self.block_selector.count() else 0)
        self.block_selector.blockSignals(False)
        self.block_selector.setVisible(self.block_selector.count() > 1)
        self.overview.set_result(result)
        if result is not None and 0 <= self._index < self.block_selector.count():
            self.overview.set_current(self._index)

    def set_block(self, index: int) -> None:
        """Show block ``index`` of the current result (``result.blocks``, then ``large_blocks``),
        keeping the highlighted cell if it fits."""
        if self._result is None or not 0 <= index < self.block_selector.count():
            return
        start = time.perf_counter()
        self._index = index
        self.block_selector.blockSignals(True)
        self.block_selector.setCurrentIndex(index)
        self.block_selector.blockSignals(False)
        self.overview.set_current(index)
        self._rows = None
        self.row_band.hide()
        large = self.current_large_block()
        if large is not None:
            self._show_large(large)
            self.block_changed.emit(index)
            return
        self._show_plots(large=False)
        self.reset_button.setEnabled(True)
        self.log_scale.setEnabled(True)
        block = self.forward.shown(self._result.blocks[index])  # the forward comparison in forward mode
        rows, cols = block.shape
        self._factor = None
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
            self.readout.setText(f"{rows:,} x {cols:,} block: hover a cell to compare its values.")
        else:
            self._set_highlight(cell)
        self._redraw_ms = (time.perf_counter() - start) * 1000
        self.block_changed.emit(index)

    def current_block(self) -> BlockComparison | None:
        """The block on screen when it is held in full (the banner shows its hints)."""
        if self._result is None or not 0 <= self._index < len(self._result.blocks):
            return None
        return self._result.blocks[self._index]

    def current_large_block(self) -> LargeBlock | None:
        """The block on screen when it was too large to hold and was searched instead."""
        if self._result is None:
            return None
        k = self._index - len(self._result.blocks)
        return self._result.large_blocks[k] if 0 <= k < len(self._result.large_blocks) else None

    def hover_cell(self, row: int, col: int) -> None:
        """Highlight a cell in all three plots and read it out, as the mouse does."""
        shown = self._shown()
        if shown is None:
            return
        block, r0, c0 = shown
        if not (r0 <= row < r0 + block.shape[0] and c0 <= col < c0 + block.shape[1]):
            return
        self._set_highlight((row, col))
        self.cellHovered.emit(row, col)

    def highlighted_cell(self) -> tuple[int, int] | None:
        """(row, col) framed in all three plots, or None."""
        return self._cell

    def go_to_worst(self, zoom: int | None = None) -> None:
        """Highlight the worst cell and zoom in around it, ``zoom`` cells across; by default only
        in a large block, so it can be seen (presentation zooms any block: a step that changed
        nothing on screen looked like a dead clicker)."""
        shown = self._shown()
        if shown is None or shown[0].worst is None:
            return
        block, r0, c0 = shown
        row, col = block.worst[0] + r0, block.worst[1] + c0
        across = zoom or (WORST_ZOOM if max(block.shape) > 2 * WORST_ZOOM else None)
        if across is not None and max(block.shape) > across:
            half = across / 2
            self.plot_items[0].getViewBox().setRange(
                xRange=(col - half, col + half), yRange=(row - half, row + half), padding=0
            )
        self.hover_cell(row, col)

    def reset_zoom(self) -> None:
        """The whole block (or region) again."""
        shown = self._shown()
        if shown is not None:
            block, r0, c0 = shown
            rows, cols = block.shape
            self.plot_items[0].getViewBox().setRange(QRectF(c0 - 0.5, r0 - 0.5, cols, rows), padding=0.02)

    def mark_rows(self, first: int, last: int, note: str = "") -> bool:
        """Mark rows ``first``..``last`` of the analytic map (the rows one backward call fills);
        False when the block on screen has no such rows."""
        block = self.current_block()
        if block is None or not 0 <= first <= last < block.shape[0]:
            self.clear_rows()
            return False
        self._rows = (first, last)
        self.row_band.setRegion((first - 0.5, last + 0.5))
        self.row_band.show()
        if note:
            self.readout.setText(note)
        return True

    def clear_rows(self) -> None:
        self._rows = None
        self.row_band.hide()

    def marked_rows(self) -> tuple[int, int] | None:
        return self._rows

    def set_stale(self, text: str | None) -> None:
        """Say that what is drawn no longer matches the editor (``text`` says why); None: it does."""
        self._stale = bool(text)
        self.stale_label.set_reason(text)
        for image in (self.analytic_image, self.numerical_image, self.error_image):
            image.setOpacity(STALE_OPACITY if text else 1.0)
        self.large_page.setEnabled(not text)

    def is_stale(self) -> bool:
        return self._stale

    def downsampling(self) -> int:
        """Cells per pixel side in the images on screen (1: every cell)."""
        return self._factor or 1

    def redraw_ms(self) -> float:
        """How long the last set_block took on the Python side (drawing happens on paint)."""
        return self._redraw_ms

    def figures(self) -> dict[str, dict]:
        """What ``figures.export_figure`` draws for each figure: the three maps with their bars,
        and the error map alone."""
        return self.plots.figures()

    def export(self, name: str, path: str, *, size=DEFAULT_SIZE, caption: str = "") -> None:
        """One figure ('jacobians' or 'error_map') as PNG, SVG or PDF (by ``path``'s suffix)."""
        if self._shown() is None:
            raise OSError(
                "A block too large to hold has no heatmaps to export until a region of it is computed: "
                "compute one, or export its cells as CSV instead."
            )
        self.plots.export(name, path, size=size, caption=caption)

    def export_png(self, path: str) -> None:
        """The three plots and their colour bars as one PNG, wide enough for a slide."""
        self.export("jacobians", path, size=slide_size(0.45))

    # internals --------------------------------------------------------------------------------

    def _clear(self, text: str) -> None:
        for image in (self.analytic_image, self.numerical_image, self.error_image):
            image.clear()
        self.plots.set_cells(None, None)
        self.failing_outline.clear()
        self.clear_rows()
        self._set_highlight(None)
        self._factor = None
        self._show_plots(large=False)
        self.worst_button.setEnabled(False)
        self.worst_button.setToolTip("")
        self.reset_button.setEnabled(False)
        self.view_note.hide()
        self.readout.setText(text)

    def _show_plots(self, *, large: bool) -> None:
        """A block held in full: heatmaps only; a large block: its page, and the heatmaps of its
        region when one is shown."""
        self.large_scroll.setVisible(large)
        self.plots.setVisible(not large or self.shown_region() is not None)

    def _shown(self) -> tuple[BlockComparison, int, int] | None:
        """What the heatmaps show, with the block row and column of its first cell: the block on
        screen, or the region shown of a large one."""
        block = self.current_block()
        if block is not None:
            return self.forward.shown(block), 0, 0
        region = self.shown_region()
        return None if region is None else (region.comparison, region.row0, region.col0)

    def _display(self) -> BlockDisplay:
        """The current block's (or region's) display prep, made on its first visit."""
        region = self.shown_region()
        if region is not None:
            if id(region) not in self._region_displays:
                self._region_displays[id(region)] = BlockDisplay(region.comparison, self._result.settings.atol)
            return self._region_displays[id(region)]
        forward = self.forward.display(self._index, self._result.blocks[self._index], self._result.settings.atol)
        if forward is not None:
            return forward
        if self._index not in self._displays:
            block = self._result.blocks[self._index]
            self._displays[self._index] = BlockDisplay(block, self._result.settings.atol)
        return self._displays[self._index]

    def view_pixels(self) -> tuple[float, float]:
        """(width, height) of one heatmap's view in pixels."""
        return self.plots.view_pixels()

    def _draw_images(self) -> None:
        """Hand the images to pyqtgraph at the pooling the zoom needs; levels stay explicit."""
        display = self._display()
        factor = self.plots.wanted_factor(display)
        if factor == self._factor:
            return
        self._factor = factor
        _, r0, c0 = self._shown()
        outlined = self.plots.draw(display, factor, (r0, c0))
        text, tip = view_note(factor, display.block.n_failing, outlined)
        self.view_note.setText(text)
        self.view_note.setToolTip(tip)
        self.view_note.setVisible(bool(text))
        self._draw_error()

    def _draw_error(self) -> None:
        log = self.log_scale.isChecked()
        self.plots.draw_error(self._display(), self._factor or 1, log=log, caption=self.forward.error_caption(log))

    def _set_highlight(self, cell: tuple[int, int] | None) -> None:
        self._cell = cell
        self.plots.highlight(cell)
        shown = self._shown()
        if cell is not None and self._result is not None and shown is not None:
            block, r0, c0 = shown
            self.readout.setText(self.forward.readout(self._result, block, *cell, offset=(r0, c0)))

    def _worst_tip(self, block: BlockComparison, region: BlockRegion | None = None) -> str:
        if block.worst is None or self._result is None:
            return ""
        where = self._result.cell_label(block, *(region.worst if region else block.worst))
        verdict = "fails" if not block.passed else "within tolerance"
        return f"Largest |err|: {where} ({block.max_abs_error:.2g}, {verdict})"

    # theme and text fitting -----------------------------------------------------------------------

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.setFont(theme.font(self._widget_points))
        self.overview.set_text_font(theme.font(self._widget_points), high_contrast=theme.high_contrast)
        self.readout.setFont(theme.font(READOUT_PT))
        self.large_summary.setFont(theme.font(READOUT_PT))
        self.large_table.setFont(theme.font(READOUT_PT - 1))
        self.view_note.setFont(theme.font(10))
        self.view_note.setStyleSheet(f"color: {theme.muted}")
        self.stale_label.set_theme(theme)
        self.plots.apply_theme()

    # events -------------------------------------------------------------------------------------

    def _on_block_selected(self, index: int) -> None:
        self.set_block(index)

    def _on_square_cells_changed(self, square: bool) -> None:
        self.plots.set_square_cells(square)
        self.reset_zoom()

    def _on_forward_mode_changed(self, _mode: str) -> None:
        """Backward ↔ forward: the analytic and error maps, titles, outlines and readout swap; the
        zoom and the highlighted cell stay (with none, a failing comparison highlights its worst)."""
        self.plots.set_titles(self.forward.titles())
        self._fill_block_list()
        block = self.current_block()
        if block is None:
            return
        shown = self.forward.shown(block)
        self._factor = None
        self._draw_images()
        self.worst_button.setEnabled(shown.worst is not None)
        self.worst_button.setToolTip(self._worst_tip(shown))
        self._set_highlight(self._cell or (None if shown.passed else shown.worst))  # as a new block does

    def _on_log_scale_changed(self, _checked: bool) -> None:
        if self._shown() is not None:
            self._draw_error()

    def _on_range_changed(self, *_args) -> None:
        if not self._zoom_guard and self._shown() is not None:
            self._draw_images()

    def _on_mouse_clicked(self, event) -> None:
        if event.double() and self._shown() is not None:
            self.reset_zoom()

    def _on_mouse_moved(self, args: tuple) -> None:
        cell = self.plots.cell_at(args[0]) if self._shown() is not None else None
        if cell is not None and cell != self._cell:
            self.hover_cell(*cell)
