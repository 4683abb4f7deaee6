"""Elementwise comparison of the two Jacobians with gradcheck's tolerance rule.

A cell fails when ``|a - n| > atol + rtol * |n|`` (``torch.allclose``'s rule), or when either
value is not finite. Each cell maps back to ``(output index, input index)`` so a report can say
``out0[3, 1] / weight[2, 0]`` instead of ``(61, 40)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from gradviz.schema.indices import cell_index
from gradviz.schema.settings import Tolerance

ROW_CHUNK_CELLS = 2**18  # 2 MB of float64 per temporary: the passes below stay in cache


@dataclass
class BlockComparison:
    """One (output i, input j) block: both Jacobians, |a - n|, the failing mask and a summary."""

    output: int
    input: int
    out_shape: tuple[int, ...]
    in_shape: tuple[int, ...]
    analytic: np.ndarray
    numerical: np.ndarray
    error: np.ndarray
    failing: np.ndarray
    max_abs_error: float
    n_failing: int
    n_nonfinite: int
    worst: tuple[int, int] | None
    hints: list[str] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        return self.analytic.shape

    @property
    def passed(self) -> bool:
        return self.n_failing == 0

    def cell_index(self, row: int, col: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(index into output i, index into input j)`` of Jacobian cell ``(row, col)``."""
        return cell_index(row, col, self.out_shape, self.in_shape)


def compare_block(
    output: int,
    input: int,
    out_shape: tuple[int, ...],
    in_shape: tuple[int, ...],
    analytic: np.ndarray,
    numerical: np.ndarray,
    tol: Tolerance,
) -> BlockComparison:
    """Error and failing mask, in row chunks so no full-size temporaries pile up.

    The arithmetic runs in torch on views of the NumPy arrays: multi-threaded, and quiet about
    NaN where NumPy would warn. The stored error map is float32 (it is for display); the
    maximum, the worst cell and the verdict come from the float64 values.
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
        a, n = a_all[r0 : r0 + step], n_all[r0 : r0 + step]
        e = (a - n).abs_()  # NaN or Inf here exactly when a or n is not finite
        f = f_all[r0 : r0 + step]
        torch.gt(e, n.abs().mul_(tol.rtol).add_(tol.atol), out=f)
        finite = torch.isfinite(e)
        if not bool(finite.all()):
            nonfinite = ~finite
            e.masked_fill_(nonfinite, math.inf)  # a non-finite value is a failing cell, the worst kind
            f.logical_or_(nonfinite)
            n_nonfinite += int(nonfinite.count_nonzero())
        e_all[r0 : r0 + step].copy_(e)
        n_failing += int(f.count_nonzero())
        if e.numel():
            flat = int(torch.argmax(e))
            if float(e.view(-1)[flat]) > max_err:
                max_err = float(e.view(-1)[flat])
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
