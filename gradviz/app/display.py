"""Jacobian blocks made ready to draw: explicit colour levels and float32 images, pooled for a big block.

NumPy only (no Qt), so the result loader runs it off the GUI thread and tests run it without a
display. A 2000x2000 block is first shown pooled to about screen size; one failing cell in a
million still shows because errors and failures are pooled with the max.
"""

from __future__ import annotations

import math

import numpy as np

from gradviz.schema.results import BlockComparison, CheckResult

LOG_FLOOR = 1e-12  # log scale clips errors below this
OVERVIEW = 512  # a bigger block is first shown pooled to this many pixels across
OUTLINE_LIMIT = 2000  # outline failing cells one by one up to this many; the tint always shows
KINDS = ("analytic", "numerical", "error", "log_error", "failing")


def pool(a: np.ndarray, factor: int, *, mean: bool) -> np.ndarray:
    """factor x factor cells into one pixel: the mean for values, the max for errors and failures."""
    rows, cols = np.arange(0, a.shape[0], factor), np.arange(0, a.shape[1], factor)
    ufunc = np.add if mean else np.maximum
    out = ufunc.reduceat(ufunc.reduceat(a, rows, axis=0), cols, axis=1).astype(np.float32)
    if mean:
        out /= np.outer(np.diff(rows, append=a.shape[0]), np.diff(cols, append=a.shape[1]))
    return np.ascontiguousarray(out)


def max_abs_finite(a: np.ndarray) -> float:
    return float(np.max(np.abs(a), where=np.isfinite(a), initial=0.0))


class BlockDisplay:
    """One block's levels and images. Each image is made on first use and kept, so switching back
    to a block or zooming again costs no recomputation."""

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
        self.factor = max(1, math.ceil(max(block.shape) / OVERVIEW))
        self.outline = None  # (cols, rows) of the failing cells, when few enough to draw one by one
        if 0 < block.n_failing <= OUTLINE_LIMIT:
            rows, cols = np.nonzero(block.failing)
            self.outline = (cols, rows)
        self._images: dict[tuple[str, bool], np.ndarray] = {}

    def image(self, kind: str, full: bool) -> np.ndarray:
        """A contiguous float32 image; ``kind`` is one of KINDS (failing: a 0/1 mask)."""
        if kind not in KINDS:
            raise ValueError(f"no image kind {kind!r}: use one of {', '.join(KINDS)}")
        key = (kind, full or self.factor == 1)
        if key not in self._images:
            self._images[key] = self._make(kind, key[1])
        return self._images[key]

    def extent(self, full: bool) -> tuple[int, int]:
        """(cols, rows) in cells that the image at this resolution covers: pooled pixels are whole."""
        rows, cols = self.block.shape
        f = 1 if full else self.factor
        return math.ceil(cols / f) * f, math.ceil(rows / f) * f

    def wants_full_res(self, seen: tuple[float, float], pixels: tuple[float, float]) -> bool:
        """The pooled overview is enough while it has a sample per screen pixel of the view.

        ``seen``: (cols, rows) of cells in view; ``pixels``: (width, height) of the view.
        """
        if self.factor == 1:
            return True
        rows, cols = self.block.shape
        seen_cols, seen_rows = min(seen[0], cols) / self.factor, min(seen[1], rows) / self.factor
        return seen_cols < 0.75 * pixels[0] or seen_rows < 0.75 * pixels[1]

    def _make(self, kind: str, full: bool) -> np.ndarray:
        if kind == "log_error":  # log10 commutes with the max pooling: log the pooled error
            return np.log10(np.maximum(self.image("error", full), np.float32(10.0 ** self.log_levels[0])))
        if kind == "error":  # non-finite (inf) shows as the top colour
            source = np.where(np.isfinite(self.block.error), self.block.error, self.error_top)
        else:
            source = getattr(self.block, kind)
        if full:
            return np.ascontiguousarray(source, dtype=np.float32)
        return pool(source, self.factor, mean=kind in ("analytic", "numerical"))


def first_block_index(result: CheckResult) -> int:
    """The block shown first: the first failing one, else the first."""
    return next((k for k, b in enumerate(result.blocks) if not b.passed), 0)


def prepare_displays(result: CheckResult) -> dict[int, BlockDisplay]:
    """The block shown first, its overview images made: run on a worker thread (NumPy releases
    the GIL), so a 2000x2000 result reaches the screen without a long pause in the event loop."""
    if not result.blocks:
        return {}
    index = first_block_index(result)
    display = BlockDisplay(result.blocks[index], result.settings.atol)
    for kind in ("analytic", "numerical", "error", "failing"):
        display.image(kind, False)
    return {index: display}
