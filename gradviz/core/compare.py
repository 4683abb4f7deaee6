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

import numpy as np
import torch

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
    """Counts, the maximum error and the worst cell, in one pass of row chunks; the error map and
    failing mask are built only if something reads them (``BlockComparison.error``/``failing``).

    ``compute_dtype`` is the dtype gradcheck compares in (both Jacobians' common dtype), so a
    float32 check rounds as gradcheck does. The error map is float32 (it is for display); the
    maximum, the worst cell and the verdict come from the compared values.
    """
    cols = analytic.shape[1]
    n_failing = n_nonfinite = 0
    max_err, worst = -1.0, None
    for r0, _, f, nonfinite, flat, largest in _chunks(analytic, numerical, tol, compute_dtype):
        n_nonfinite += nonfinite
        n_failing += int(f.count_nonzero())
        if largest > max_err:
            max_err = largest
            worst = (r0 + flat // cols, flat % cols)
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


def block_maps(
    analytic: np.ndarray, numerical: np.ndarray, tol: Tolerance, compute_dtype: torch.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """The float32 error map and the bool failing mask, from the very chunks ``compare_block`` summed."""
    error = np.empty(analytic.shape, dtype=np.float32)
    failing = np.empty(analytic.shape, dtype=bool)
    e_all, f_all = torch.from_numpy(error), torch.from_numpy(failing)
    for r0, e, f, *_ in _chunks(analytic, numerical, tol, compute_dtype):
        e_all[r0 : r0 + e.shape[0]].copy_(e)
        f_all[r0 : r0 + f.shape[0]].copy_(f)
    return error, failing


def _chunks(
    analytic: np.ndarray, numerical: np.ndarray, tol: Tolerance, compute_dtype: torch.dtype
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, int, int, float]]:
    """``(first row, |a - n|, failing, non-finite cells, flat index of the largest error, the
    largest error)`` per chunk of rows; empty chunks skipped.

    A NaN or a lone infinity has error inf (the worst kind of failure); equal infinities error 0."""
    rows, cols = analytic.shape
    step = max(1, ROW_CHUNK_CELLS // max(1, cols))
    a_all, n_all = torch.from_numpy(analytic), torch.from_numpy(numerical)
    for r0 in range(0, rows, step):
        a = a_all[r0 : r0 + step].to(compute_dtype)
        n = n_all[r0 : r0 + step].to(compute_dtype)
        if not a.numel():
            continue
        e = (a - n).abs_()  # NaN or Inf here exactly when a or n is not finite (or a - n overflows)
        # failing: |a - n| > atol + rtol |n|. Finite cells: exactly not isclose; the others are set below
        f = torch.gt(e, n.abs().mul_(tol.rtol).add_(tol.atol))
        flat = int(torch.argmax(e))  # a NaN counts as the largest: one pass finds both
        largest = float(e.view(-1)[flat])
        count = 0
        if not math.isfinite(largest):
            nonfinite = ~torch.isfinite(e)
            count = int(nonfinite.count_nonzero())
            equal = a == n  # among non-finite cells only equal infinities are close (torch.isclose)
            f.logical_and_(~nonfinite).logical_or_(nonfinite & ~equal)
            e.masked_fill_(nonfinite & equal, 0.0).masked_fill_(nonfinite & ~equal, math.inf)
            flat = int(torch.argmax(e))
            largest = float(e.view(-1)[flat])
        yield r0, e, f, count, flat, largest
