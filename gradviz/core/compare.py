"""Elementwise comparison of the two Jacobians with gradcheck's tolerance rule.

A cell passes exactly when ``torch.isclose(a, n, rtol, atol)`` holds, which is what gradcheck's
``allclose`` asks of every cell: ``|a - n| <= atol + rtol * |n|``, equal infinities pass, NaN
fails. Each cell maps back to ``(output index, input index)`` so a report can say
``out0[3, 1] / weight[2, 0]`` instead of ``(61, 40)``.
"""

from __future__ import annotations

import math

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
    """Error and failing mask, in row chunks so no full-size temporaries pile up.

    ``compute_dtype`` is the dtype gradcheck compares in (both Jacobians' common dtype), so a
    float32 check rounds as gradcheck does. The stored error map is float32 (it is for display);
    the maximum, the worst cell and the verdict come from the compared values.
    """
    rows, cols = analytic.shape
    error = np.empty(analytic.shape, dtype=np.float32)
    failing = np.empty(analytic.shape, dtype=bool)
    step = max(1, ROW_CHUNK_CELLS // max(1, cols))
    a_all, n_all = torch.from_numpy(analytic), torch.from_numpy(numerical)
    e_all, f_all = torch.from_numpy(error), torch.from_numpy(failing)
    n_failing = n_nonfinite = 0
    max_err, worst = -1.0, None
    for r0 in range(0, rows, step):
        a = a_all[r0 : r0 + step].to(compute_dtype)
        n = n_all[r0 : r0 + step].to(compute_dtype)
        e = (a - n).abs_()  # NaN or Inf here exactly when a or n is not finite (or a - n overflows)
        f = f_all[r0 : r0 + step]
        # failing: |a - n| > atol + rtol |n|. Finite cells: exactly not isclose; the others are set below
        torch.gt(e, n.abs().mul_(tol.rtol).add_(tol.atol), out=f)
        if not e.numel():
            continue
        flat = int(torch.argmax(e))  # a NaN counts as the largest: one pass finds both
        largest = float(e.view(-1)[flat])
        if not math.isfinite(largest):
            nonfinite = ~torch.isfinite(e)
            n_nonfinite += int(nonfinite.count_nonzero())
            equal = a == n  # among non-finite cells only equal infinities are close (torch.isclose)
            f.logical_and_(~nonfinite).logical_or_(nonfinite & ~equal)
            # a NaN or a lone infinity is the worst kind of failure; equal infinities are no error
            e.masked_fill_(nonfinite & equal, 0.0).masked_fill_(nonfinite & ~equal, math.inf)
            flat = int(torch.argmax(e))
            largest = float(e.view(-1)[flat])
        e_all[r0 : r0 + step].copy_(e)
        n_failing += int(f.count_nonzero())
        if largest > max_err:
            max_err = largest
            worst = (r0 + flat // cols, flat % cols)
    max_err = max(max_err, 0.0)
    return BlockComparison(
        output,
        input,
        tuple(out_shape),
        tuple(in_shape),
        analytic,
        numerical,
        error,
        failing,
        max_err,
        n_failing,
        n_nonfinite,
        worst,
    )
