"""Elementwise comparison of the two Jacobians with gradcheck's tolerance rule.

A cell passes exactly when ``torch.isclose(a, n, rtol, atol)`` holds, which is what gradcheck's
``allclose`` asks of every cell: ``|a - n| <= atol + rtol * |n|``, equal infinities pass, NaN
fails. Each cell maps back to ``(output index, input index)`` so a report can say
``out0[3, 1] / weight[2, 0]`` instead of ``(61, 40)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import partial
from typing import NamedTuple

import numpy as np
import torch

from gradviz.schema.mismatch import cell_errors
from gradviz.schema.results import BlockComparison
from gradviz.schema.settings import Tolerance

ROW_CHUNK_CELLS = 2**18  # 2 MB of float64 per temporary: the passes below stay in cache


def compare_block(
    output: int,
    input: int,
    out_shape: tuple[int, ...],
    in_shape: tuple[int, ...],
    analytic: np.ndarray,
    numerical: np.ndarray,
    tol: Tolerance,
    *,
    compute_dtype: torch.dtype = torch.float64,
) -> BlockComparison:
    """Counts, the maximum error and the worst cell, in one pass of row chunks (and the worst
    chunk once more where a later chunk reused its buffers); the error map and failing mask are
    built only if something reads them (``BlockComparison.error``/``failing``).

    ``compute_dtype`` is the dtype gradcheck compares in (both Jacobians' common dtype), so a
    float32 check rounds as gradcheck does. The error map is float32 (it is for display); the
    maximum and the verdict come from the compared values. The worst cell is the first (row-major)
    of the largest ``cell_errors``, the float64 ranking the failing-cell lists share: in float64
    that is the compared error itself; a float32 check ranks each chunk once more in float64.
    """
    cols = analytic.shape[1]
    n_failing = n_nonfinite = 0
    max_err, top, worst_chunk = -1.0, -1.0, None
    exact = compute_dtype == torch.float64  # the compared errors are the ranking's
    ranker = None if exact else _Ranker(analytic, numerical)
    for chunk in _chunks(analytic, numerical, tol, compute_dtype):
        n_nonfinite += chunk.nonfinite
        n_failing += 0 if chunk.failing is None else int(chunk.failing.count_nonzero())
        max_err = max(max_err, chunk.largest)
        ranked = chunk.largest if ranker is None else ranker.largest(chunk)
        if ranked > top:  # the first chunk holding the ranking's maximum
            top, worst_chunk = ranked, chunk
    worst = None
    if worst_chunk is not None:  # the cell-by-cell ranking runs on one chunk only
        worst = _first_largest(analytic, numerical, worst_chunk, cols)
    return BlockComparison(
        output,
        input,
        tuple(out_shape),
        tuple(in_shape),
        analytic,
        numerical,
        max(max_err, 0.0),
        n_failing,
        n_nonfinite,
        worst,
        build_maps=partial(block_maps, analytic, numerical, tol, compute_dtype),
    )


_RANK_CELLS = 16_384  # cells ranked at a time: the float64 temporaries stay far below a chunk's


def _first_largest(analytic: np.ndarray, numerical: np.ndarray, chunk: _Chunk, cols: int) -> tuple[int, int] | None:
    """The first (row-major) cell of the chunk's rows with the largest ``cell_errors``, ranked a
    few rows at a time so the ranking adds no chunk-sized buffer to the check's peak."""
    step = max(1, _RANK_CELLS // max(cols, 1))
    best, where = -1.0, None
    for row in range(chunk.first_row, chunk.first_row + chunk.error.shape[0], step):
        errors = cell_errors(analytic[row : row + step], numerical[row : row + step])
        if errors.size == 0:
            continue
        flat = int(np.argmax(errors))
        if errors.flat[flat] > best:
            best, where = float(errors.flat[flat]), (row + flat // cols, flat % cols)
    return where


def _ranking(analytic: np.ndarray, numerical: np.ndarray, chunk: _Chunk) -> np.ndarray:
    """``cell_errors`` of the chunk's rows (read from the Jacobians: the chunk's own buffers may
    have been reused by a later chunk)."""
    rows = slice(chunk.first_row, chunk.first_row + chunk.error.shape[0])
    return cell_errors(analytic[rows], numerical[rows])


class _Ranker:
    """The largest ``cell_errors`` of each chunk of a check compared in another dtype than
    float64: one float64 |a - n| pass in a buffer of its own (NumPy's would be ~8x slower),
    ``cell_errors`` itself only for a chunk holding a value that is not finite."""

    def __init__(self, analytic: np.ndarray, numerical: np.ndarray) -> None:
        self.arrays = analytic, numerical
        self.a = torch.from_numpy(analytic)
        self.n = torch.from_numpy(numerical)
        self.buffer: torch.Tensor | None = None

    def largest(self, chunk: _Chunk) -> float:
        rows = slice(chunk.first_row, chunk.first_row + chunk.error.shape[0])
        a, n = self.a[rows].to(torch.float64), self.n[rows].to(torch.float64)
        if self.buffer is None:
            self.buffer = torch.empty(a.shape, dtype=torch.float64)
        value = float(torch.amax(torch.sub(a, n, out=self.buffer[: a.shape[0]]).abs_()))
        return value if math.isfinite(value) else float(np.max(_ranking(*self.arrays, chunk)))


def block_maps(
    analytic: np.ndarray, numerical: np.ndarray, tol: Tolerance, compute_dtype: torch.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """The float32 error map and the bool failing mask, from the very chunks ``compare_block`` summed."""
    error = np.empty(analytic.shape, dtype=np.float32)
    failing = np.empty(analytic.shape, dtype=bool)
    e_all, f_all = torch.from_numpy(error), torch.from_numpy(failing)
    for chunk in _chunks(analytic, numerical, tol, compute_dtype, masks=True):
        assert chunk.failing is not None
        rows = slice(chunk.first_row, chunk.first_row + chunk.error.shape[0])
        e_all[rows].copy_(chunk.error)
        f_all[rows].copy_(chunk.failing)
    return error, failing


class _Chunk(NamedTuple):
    first_row: int
    error: torch.Tensor  # |a - n|; inf where a cell fails for not being finite, 0 for equal infinities
    failing: torch.Tensor | None  # bool; None when no cell fails and no mask was asked for
    nonfinite: int  # cells where a, n or a - n is not finite
    largest: float  # the largest error (inf if any cell's is)


def _chunks(
    analytic: np.ndarray,
    numerical: np.ndarray,
    tol: Tolerance,
    compute_dtype: torch.dtype,
    *,
    start: int = 0,
    masks: bool = False,
) -> Iterator[_Chunk]:
    """The block compared chunk of rows by chunk of rows, from row ``start``; empty chunks skipped.

    Without ``masks``, a chunk whose largest error is within atol has no failing mask (no cell
    can fail): a passing check skips the threshold's three passes and the comparison.

    The temporaries are allocated once and reused, so every pass stays in cache. A chunk is
    only valid until the next one is made. A NaN or a lone infinity has error inf (the worst
    kind of failure); equal infinities error 0."""
    rows, cols = analytic.shape
    step = max(1, ROW_CHUNK_CELLS // max(1, cols))
    a_all, n_all = torch.from_numpy(analytic), torch.from_numpy(numerical)
    size = (min(step, rows), cols)
    e_buf, t_buf = torch.empty(size, dtype=compute_dtype), torch.empty(size, dtype=compute_dtype)
    f_buf = torch.empty(size, dtype=torch.bool)
    for r0 in range(start, rows, step):
        a = a_all[r0 : r0 + step].to(compute_dtype)
        n = n_all[r0 : r0 + step].to(compute_dtype)
        if not a.numel():
            continue
        k = a.shape[0]
        e = torch.sub(a, n, out=e_buf[:k]).abs_()  # NaN or Inf exactly when a or n is not finite (or a - n overflows)
        largest = float(torch.amax(e))  # NaN propagates: a NaN anywhere makes it not finite
        if not masks and largest <= tol.atol:  # then |a - n| <= atol <= atol + rtol |n| everywhere: none fails
            yield _Chunk(r0, e, None, 0, largest)  # (False for NaN; rounding to the dtype is monotonic)
            continue
        # failing: |a - n| > atol + rtol |n|. Finite cells: exactly not isclose; the others are set below
        threshold = torch.abs(n, out=t_buf[:k]).mul_(tol.rtol).add_(tol.atol)
        f = torch.gt(e, threshold, out=f_buf[:k])
        count = 0
        if not math.isfinite(largest):
            nonfinite = ~torch.isfinite(e)
            count = int(nonfinite.count_nonzero())
            equal = a == n  # among non-finite cells only equal infinities are close (torch.isclose)
            f.logical_and_(~nonfinite).logical_or_(nonfinite & ~equal)
            e.masked_fill_(nonfinite & equal, 0.0).masked_fill_(nonfinite & ~equal, math.inf)
            largest = float(torch.amax(e))
        yield _Chunk(r0, e, f, count, largest)
