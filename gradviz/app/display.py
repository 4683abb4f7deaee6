"""Jacobian blocks made ready to draw: explicit colour levels and float32 images, pooled to the screen.

NumPy only (no Qt), so the result loader runs it off the GUI thread and tests run it without a
display. A block with more cells than its view has pixels is shown pooled: factor x factor cells
to a pixel, never fewer pixels' worth of cells than the view shows, so Qt's scaling never drops a
row. Values are pooled by the largest |value| of the tile (its sign kept) and errors and
failures by the max, so one non-zero on the diagonal of a 3600x3600 Jacobian, or one failing
cell in a million, still shows.
"""

from __future__ import annotations

import math

import numpy as np

from gradviz.schema.results import BlockComparison, CheckResult

LOG_FLOOR = 1e-12  # log scale clips errors below this
# pooling factors, so a small zoom step reuses the image it already has
LADDER = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
OUTLINE_LIMIT = 4000  # failing tiles outlined one by one up to this many
KINDS = ("analytic", "numerical", "error", "log_error", "failing")
PREPARED_PIXELS = (420, 300)  # the view a result is first prepared for, before it is on screen


def pool(a: np.ndarray, factor: int, *, mean: bool) -> np.ndarray:
    """factor x factor cells into one pixel: the mean, or the max (errors and failures)."""
    rows, cols = np.arange(0, a.shape[0], factor), np.arange(0, a.shape[1], factor)
    ufunc = np.add if mean else np.maximum
    out = ufunc.reduceat(ufunc.reduceat(a, rows, axis=0), cols, axis=1).astype(np.float32)
    if mean:
        out /= np.outer(np.diff(rows, append=a.shape[0]), np.diff(cols, append=a.shape[1]))
    return np.ascontiguousarray(out)


def pool_max_abs(a: np.ndarray, factor: int) -> np.ndarray:
    """factor x factor cells into one pixel: the value with the largest |value|, sign kept.

    The block is padded with zeros to whole tiles and each tile laid out along a last axis, so one
    argmax picks every tile's value (three times faster than a max and a min by reduceat)."""
    r, c = a.shape
    rows, cols = -(-r // factor), -(-c // factor)
    padded = np.zeros((rows * factor, cols * factor), dtype=np.float32)
    padded[:r, :c] = a
    tiles = padded.reshape(rows, factor, cols, factor).transpose(0, 2, 1, 3).reshape(rows, cols, factor * factor)
    pick = np.abs(tiles).argmax(axis=2)
    return np.ascontiguousarray(np.take_along_axis(tiles, pick[..., None], axis=2)[..., 0])


def max_abs_finite(a: np.ndarray) -> float:
    return float(np.max(np.abs(a), where=np.isfinite(a), initial=0.0))


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
        # symmetric over both, so zero is the neutral colour and equal colours are equal values
        top = max(max_abs_finite(block.analytic), max_abs_finite(block.numerical))
        self.value_levels = (-top, top) if top > 0 else (-1.0, 1.0)
        finite = np.isfinite(block.error)
        # at least atol, so round-off in a passing block stays dark instead of filling the scale
        self.error_top = max(float(np.max(block.error, where=finite, initial=0.0)), atol, LOG_FLOOR)
        smallest = float(np.min(block.error, where=finite & (block.error > 0), initial=np.inf))
        low = np.log10(min(max(smallest, LOG_FLOOR), self.error_top))
        self.log_levels = (low, max(np.log10(self.error_top), low + 1.0))
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
        if kind == "error":  # non-finite (inf) shows as the top colour
            source = np.where(np.isfinite(self.block.error), self.block.error, self.error_top)
        else:
            source = getattr(self.block, kind)
        if factor == 1:
            return np.ascontiguousarray(source, dtype=np.float32)
        if kind in ("analytic", "numerical"):
            return pool_max_abs(source, factor)
        return pool(source, factor, mean=False)


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
