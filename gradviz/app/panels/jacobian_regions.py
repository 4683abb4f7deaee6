"""The Jacobian panel's large blocks (``CheckResult.large_blocks``): blocks too large to hold, or
not built yet (fast mode's verdict first), shown as their page (``LargeBlockPage``), and regions
of them computed on demand (a fast-mode block's as soon as it is shown), drawn in the heatmaps at
their real row and column indices and kept until the next result.

A mixin of ``JacobianPanel``: it uses the panel's result, block index, page and heatmaps.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF

from gradviz.schema.requests import Region
from gradviz.schema.results import MAX_REGION_SIDE, BlockRegion, LargeBlock, region_around

REGION_PLOTS_HEIGHT = 300  # px the heatmaps of a region need for their colour bars' captions too


class LargeBlockRegions:
    """Computed regions per large block, which one is on screen, and the page of the block shown."""

    def shown_region(self) -> BlockRegion | None:
        """The region of a large block drawn in the heatmaps, or None."""
        k = self._region_index.get(self._index)
        return None if k is None or self.current_large_block() is None else self._regions[self._index][k]

    def regions(self) -> list[BlockRegion]:
        """The regions of the large block on screen computed so far."""
        return list(self._regions.get(self._index, []))

    def request_region(self, row0: int, col0: int, rows: int, cols: int) -> None:
        """Ask for rows ``row0..`` and columns ``col0..`` of the large block on screen, every cell
        computed; one already computed is shown at once."""
        large = self.current_large_block()
        if large is None:
            return
        for k, region in enumerate(self._regions.get(self._index, [])):
            if (region.row0, region.col0, region.shape) == (row0, col0, (rows, cols)):
                self._choose_region(k)
                return
        self.region_controls.set_running(True, f"Computing rows {row0:,}… and columns {col0:,}…")
        self.region_requested.emit(Region(large.output, large.input, row0, col0, rows, cols))

    def compute_around_worst(self) -> None:
        """The region around the worst found cell, as the page's button asks."""
        self.region_controls.worst_button.click()

    def add_region(self, region: BlockRegion) -> None:
        """A computed region: kept with its block (of the result on screen) and shown if that block is."""
        if self._result is None:
            return
        index = next(
            (len(self._result.blocks) + k for k, b in enumerate(self._result.large_blocks)
             if (b.output, b.input) == (region.output, region.input)),
            None,
        )  # fmt: skip
        if index is None:
            return
        self._regions.setdefault(index, []).append(region)
        self.region_controls.set_running(False)
        if index == self._index:
            self._choose_region(len(self._regions[index]) - 1)
        else:
            self._region_index[index] = len(self._regions[index]) - 1

    def region_failed(self, message: str) -> None:
        """The region asked for did not come: say why; what is on screen stays."""
        self.region_controls.set_running(False)
        self.region_controls.set_message(message, error=True)

    def set_region_progress(self, done: int, total: int) -> None:
        self.region_controls.set_progress(done, total)

    def set_region_started(self) -> None:
        self.region_controls.set_running(True, "Computing the region, cell by cell…")

    def clear_regions(self) -> None:
        """Forget every computed region (the code they were computed from has changed)."""
        self._regions.clear()
        self._region_index.clear()
        self._region_displays.clear()
        self.region_controls.set_running(False)
        large = self.current_large_block()
        if large is not None:
            self._show_large(large)

    def _show_large(self, block: LargeBlock) -> None:
        self._show_plots(large=True)
        self._set_highlight(None)
        region = self.shown_region()
        self.worst_button.setEnabled(region is not None and region.worst is not None)
        self.worst_button.setToolTip(self._worst_tip(region.comparison, region) if region else "")
        self.reset_button.setEnabled(region is not None)
        self.log_scale.setEnabled(region is not None)
        self.view_note.hide()
        self.large_page.show_block(
            self._result, block, self._regions.get(self._index, []), self._region_index.get(self._index, -1), region
        )
        if region is None and self._result.deferred_maps and self._index not in self._regions:
            self._fill_deferred(block)
        if region is None:
            self.readout.setText(
                "The block's cells are being computed: fast mode built no map for its verdict."
                if self._result.deferred_maps
                else "Only these cells were computed; the rest of the block was checked through projections. "
                "Compute a region to see its cells."
            )
            return
        self._draw_region(region)

    def _fill_deferred(self, block: LargeBlock) -> None:
        """fast mode gave its verdict first and built no map: the block on screen gets its maps
        now (all of it up to MAX_REGION_SIDE a side, else the region around its worst found cell),
        once per result; the other blocks when they are shown."""
        self._regions[self._index] = []  # asked: the region comes back through add_region
        worst = max(block.cells, key=lambda c: abs(c.analytic - c.numerical), default=None)
        rows, cols = region_around(worst.row if worst else 0, worst.col if worst else 0, block.shape, MAX_REGION_SIDE)
        self.request_region(rows.start, cols.start, len(rows), len(cols))

    def _draw_region(self, region: BlockRegion) -> None:
        """The region's three heatmaps, at the real rows and columns of the block, below the page
        (which keeps the height its text needs)."""
        page = self.large_page.layout()
        width = max(self.body.width(), 200)
        needed = page.totalHeightForWidth(width) if page.hasHeightForWidth() else page.sizeHint().height()
        total = sum(self.body.sizes()) or self.body.height()
        # where both do not fit, the heatmaps win and the page scrolls below its controls
        controls = self.region_controls.sizeHint().height() + page.contentsMargins().top() + 2
        self.large_scroll.setMinimumHeight(controls)  # its controls stay in reach at any window size
        share = max(controls, min(needed, total - REGION_PLOTS_HEIGHT))
        self.body.setSizes([share, max(total - share, 1)])
        rows, cols = region.shape
        self._factor = None
        self._zoom_guard = True
        self.plot_items[0].getViewBox().setRange(QRectF(region.col0 - 0.5, region.row0 - 0.5, cols, rows), padding=0.02)
        self._zoom_guard = False
        self._draw_images()
        c = region.comparison
        if region.worst is not None and c.n_failing:
            self._set_highlight(region.worst)
        else:
            self.readout.setText(
                f"Rows {region.row0:,}–{region.row0 + rows - 1:,} × columns {region.col0:,}–{region.col0 + cols - 1:,}: "
                "every cell within tolerance. Hover a cell to compare its values."
            )

    def _choose_region(self, k: int) -> None:
        self._region_index[self._index] = k
        large = self.current_large_block()
        if large is not None:
            self._show_large(large)

    def _on_region_chosen(self, k: int) -> None:
        self._choose_region(k)

    def _on_found_cell_double_clicked(self, row: int, _column: int) -> None:
        """The region around a found cell."""
        large = self.current_large_block()
        if large is None or not 0 <= row < len(large.cells):
            return
        cell = large.cells[row]
        rows, cols = region_around(cell.row, cell.col, large.shape, self.region_controls.size_box.value())
        self.request_region(rows.start, cols.start, len(rows), len(cols))
