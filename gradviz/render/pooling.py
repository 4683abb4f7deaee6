"""How a Jacobian block becomes pixels: pooling, colour levels and colour maps, for every view.

The window (pyqtgraph), the notebook and the saved figures all draw from here, so a block looks
the same wherever it is shown. NumPy only (no Qt, no torch): the figures run in Colab and on
headless servers, and the window runs it off the GUI thread.

A block with more cells than its view has pixels is pooled: ``pool_r`` x ``pool_c`` cells to a
pixel. Values keep the largest |value| of the tile (its sign kept) and errors and failures the
max, so one non-zero on the diagonal of a 3600x3600 Jacobian, or one failing cell in a million,
still shows at full strength (a mean would fade it to a millionth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradviz.schema.results import BlockComparison

LOG_FLOOR = 1e-12  # log scale clips errors below this
VALUE_KINDS = ("analytic", "numerical")
# The colour maps by their pyqtgraph names (the window) and as nine stops of each (the figures).
VALUE_MAP = "CET-D1"  # diverging blue, near-white, red: the sign of a derivative matters
ERROR_MAP = "viridis"  # sequential: an error only grows
DIVERGING_STOPS = (  # CET-D1
    (0.128, 0.316, 0.858), (0.440, 0.460, 0.885), (0.629, 0.613, 0.908), (0.791, 0.774, 0.928),
    (0.930, 0.907, 0.917), (0.942, 0.740, 0.689), (0.905, 0.544, 0.459), (0.839, 0.337, 0.241),
    (0.752, 0.008, 0.022),
)  # fmt: skip
SEQUENTIAL_STOPS = (  # viridis
    (0.267, 0.005, 0.329), (0.279, 0.175, 0.483), (0.230, 0.322, 0.546), (0.173, 0.449, 0.558),
    (0.128, 0.567, 0.551), (0.158, 0.684, 0.502), (0.369, 0.789, 0.383), (0.678, 0.864, 0.190),
    (0.993, 0.906, 0.144),
)  # fmt: skip


def _tiles(a: np.ndarray, pool_r: int, pool_c: int) -> np.ndarray:
    """rows x cols x (pool_r * pool_c): the block padded with zeros to whole tiles, each tile laid
    out along the last axis, so one reduction handles every tile at once."""
    r, c = a.shape
    rows, cols = -(-r // pool_r), -(-c // pool_c)
    padded = np.zeros((rows * pool_r, cols * pool_c), dtype=np.float32)
    padded[:r, :c] = a
    return padded.reshape(rows, pool_r, cols, pool_c).transpose(0, 2, 1, 3).reshape(rows, cols, pool_r * pool_c)


def pool_max_abs(a: np.ndarray, pool_r: int, pool_c: int | None = None) -> np.ndarray:
    """A contiguous float32 image, each ``pool_r`` x ``pool_c`` tile (square when ``pool_c`` is
    None) as its value of largest |value|, sign kept (a NaN in a tile wins: it stays visible).

    One argmax over the tile axis picks every tile's value (three times faster than a max and a
    min by reduceat)."""
    pool_c = pool_r if pool_c is None else pool_c
    if pool_r == pool_c == 1:
        return np.ascontiguousarray(a, dtype=np.float32)
    tiles = _tiles(a, pool_r, pool_c)
    pick = np.abs(tiles).argmax(axis=2)
    return np.ascontiguousarray(np.take_along_axis(tiles, pick[..., None], axis=2)[..., 0])


def pool_max(a: np.ndarray, pool_r: int, pool_c: int | None = None) -> np.ndarray:
    """A contiguous float32 image, each tile as its max (errors, 0/1 failure masks)."""
    pool_c = pool_r if pool_c is None else pool_c
    if pool_r == pool_c == 1:
        return np.ascontiguousarray(a, dtype=np.float32)
    rows, cols = np.arange(0, a.shape[0], pool_r), np.arange(0, a.shape[1], pool_c)
    out = np.maximum.reduceat(np.maximum.reduceat(a, rows, axis=0), cols, axis=1)
    return np.ascontiguousarray(out, dtype=np.float32)


def max_abs_finite(a: np.ndarray) -> float:
    """The largest finite |value| (0 for none)."""
    return float(np.max(np.abs(a), where=np.isfinite(a), initial=0.0))


@dataclass(frozen=True)
class Levels:
    """A block's explicit colour levels. ``value``: symmetric about zero over analytic and
    numerical both, so zero is the neutral colour and equal colours are equal values.
    ``error_top``: the largest finite error, at least atol, so round-off in a passing block stays
    dark instead of filling the scale. ``log``: log10 levels of the error for the log scale."""

    value: tuple[float, float]
    error_top: float
    log: tuple[float, float]

    @property
    def error(self) -> tuple[float, float]:
        return (0.0, self.error_top)

    @classmethod
    def of(cls, block: BlockComparison, atol: float) -> Levels:
        top = max(max_abs_finite(block.analytic), max_abs_finite(block.numerical))
        value = (-top, top) if top > 0 else (-1.0, 1.0)
        finite = np.isfinite(block.error)
        error_top = max(float(np.max(block.error, where=finite, initial=0.0)), atol, LOG_FLOOR)
        smallest = float(np.min(block.error, where=finite & (block.error > 0), initial=np.inf))
        low = float(np.log10(min(max(smallest, LOG_FLOOR), error_top)))
        return cls(value, error_top, (low, max(float(np.log10(error_top)), low + 1.0)))


def pooled_map(block: BlockComparison, kind: str, error_top: float, pool_r: int, pool_c: int | None = None) -> np.ndarray:
    """One map of ``block`` (analytic, numerical, error or failing) as a pooled float32 image: the
    one the window and the figures colour. A non-finite error shows as ``error_top``, the top of
    the scale (``Levels.error_top``)."""
    if kind in VALUE_KINDS:
        return pool_max_abs(getattr(block, kind), pool_r, pool_c)
    if kind == "error":
        return pool_max(np.where(np.isfinite(block.error), block.error, error_top), pool_r, pool_c)
    if kind == "failing":
        return pool_max(block.failing.astype(np.float32), pool_r, pool_c)
    raise ValueError(f"no map {kind!r}: use one of analytic, numerical, error, failing")
