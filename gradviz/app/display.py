"""Jacobian blocks made ready to draw: explicit colour levels and float32 images, pooled to the screen.

NumPy only (no Qt), so the result loader runs it off the GUI thread and tests run it without a
display. A block with more cells than its view has pixels is shown pooled: factor x factor cells
to a pixel, never fewer pixels' worth of cells than the view shows, so Qt's scaling never drops a
row. How a tile is pooled and the levels come from ``gradviz.render.pooling``, which the
notebook and the saved figures use too, so a block looks the same everywhere.
"""

from __future__ import annotations

import math

import numpy as np

from gradviz.render.pooling import LOG_FLOOR, Levels, pool_max_abs, pooled_map
from gradviz.schema.results import BlockComparison, CheckResult

__all__ = ["LOG_FLOOR", "BlockDisplay", "factor_for", "first_block_index", "pool_max_abs", "prepare_displays"]

# pooling factors, so a small zoom step reuses the image it already has
LADDER = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
OUTLINE_LIMIT = 4000  # failing tiles outlined one by one up to this many
KINDS = ("analytic", "numerical", "error", "log_error", "failing")
PREPARED_PIXELS = (420, 300)  # the view a result is first prepared for, before it is on screen


def factor_for(shape: tuple[int, int], seen: tuple[float, float], pixels: tuple[float, float]) -> int:
    """The pooling factor for a view: the first of LADDER with no more than one pixel's worth of
    image per screen pixel. ``seen``: (cols, rows) of cells in view; ``pixels``: its (width, height)."""
    rows, cols = shape
    per_pixel = max(min(seen[0], cols) / max(pixels[0], 1.0), min(seen[1], rows) / max(pixels[1], 1.0))
    if per_pixel <= 1.0:
        return 1
    return next((f for f in LADDER if f >= per_pixel), LADDER[-1])


class BlockDisplay:
    """One block's levels and images. Each image is made on first use at each factor and kept, so
    switching back to a block or zooming back costs no recomputation."""

    def __init__(self, block: BlockComparison, atol: float) -> None:
        self.block = block
        # one rule with the notebook and the saved figures: gradviz.render.pooling
        self.levels = Levels.of(block, atol)
        self.value_levels = self.levels.value
        self.error_top = self.levels.error_top
        self.log_levels = self.levels.log
        self._images: dict[tuple[str, int], np.ndarray] = {}
        self._outlines: dict[int, tuple[np.ndarray, ...] | None] = {}

    def factor_for(self, seen: tuple[float, float], pixels: tuple[float, float]) -> int:
        return factor_for(self.block.shape, seen, pixels)

    def image(self, kind: str, factor: int = 1) -> np.ndarray:
        """A contiguous float32 image pooled ``factor`` x ``factor``; ``kind`` is one of KINDS
        (failing: a 0/1 mask)."""
        if kind not in KINDS:
            raise ValueError(f"no image kind {kind!r}: use one of {', '.join(KINDS)}")
        key = (kind, max(1, int(factor)))
        if key not in self._images:
            self._images[key] = self._make(kind, key[1])
        return self._images[key]

    def extent(self, factor: int = 1) -> tuple[int, int]:
        """(cols, rows) in cells that the image at this factor covers: pooled pixels are whole."""
        rows, cols = self.block.shape
        return math.ceil(cols / factor) * factor, math.ceil(rows / factor) * factor

    def outline(self, factor: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The failing tiles at this factor as rectangles in cell coordinates (x, y, width, height),
        cell (r, c) centred on (c, r); None when there are more than OUTLINE_LIMIT (or none)."""
        if factor not in self._outlines:
            rows, cols = np.nonzero(self.image("failing", factor) > 0)
            if not 0 < len(rows) <= OUTLINE_LIMIT:
                self._outlines[factor] = None
            else:
                n_rows, n_cols = self.block.shape
                x, y = cols * factor, rows * factor
                width = np.minimum(factor, n_cols - x).astype(float)
                height = np.minimum(factor, n_rows - y).astype(float)
                self._outlines[factor] = (x - 0.5, y - 0.5, width, height)
        return self._outlines[factor]

    def _make(self, kind: str, factor: int) -> np.ndarray:
        if kind == "log_error":  # log10 commutes with the max pooling: log the pooled error
            return np.log10(np.maximum(self.image("error", factor), np.float32(10.0 ** self.log_levels[0])))
        return pooled_map(self.block, kind, self.error_top, factor)


def first_block_index(result: CheckResult) -> int:
    """The block shown first: the first failing one, else the first."""
    return next((k for k, b in enumerate(result.blocks) if not b.passed), 0)


def prepare_displays(result: CheckResult, pixels: tuple[float, float] = PREPARED_PIXELS) -> dict[int, BlockDisplay]:
    """The block shown first, its images made for a view of ``pixels``: run on a worker thread
    (NumPy releases the GIL), so a 2000x2000 result reaches the screen without a long pause in
    the event loop."""
    if not result.blocks:
        return {}
    index = first_block_index(result)
    block = result.blocks[index]
    display = BlockDisplay(block, result.settings.atol)
    rows, cols = block.shape
    factor = display.factor_for((cols, rows), pixels)
    for kind in ("analytic", "numerical", "error", "failing"):
        display.image(kind, factor)
    display.outline(factor)
    return {index: display}
