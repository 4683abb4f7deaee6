"""Guess *why* a block fails, from the shape of the disagreement.

Each rule looks for one classic mistake (a dropped transpose, a flipped sign, a wrong
factor, a gradient into entries the forward ignores, a forgotten gradient) and says it in one
sentence. They are hints, never verdicts: the failing cells are the facts.
"""

from __future__ import annotations

import numpy as np

from gradviz.schema.indices import format_index
from gradviz.schema.results import BlockComparison

# Hints look at small blocks only; beyond this the extra passes would cost more than they help.
MAX_HINT_CELLS = 4_000_000


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to well within gradcheck's default tolerance (10x atol and rtol)."""
    return bool(np.all(np.abs(a - b) <= 1e-4 + 1e-2 * np.abs(b)))


def diagnose(block: BlockComparison, in_name: str) -> list[str]:
    """One-sentence hints for a failing block; empty when it passes or nothing fits."""
    if block.passed or block.analytic.size > MAX_HINT_CELLS or block.n_nonfinite:
        return []
    a, n = block.analytic, block.numerical
    hints = []
    if not np.any(a) and np.any(n):
        return [
            f"The backward gives no gradient for {in_name} (returned None or zeros), but the output depends on it."
        ]
    if np.any(n) and _close(a, -n):
        return ["Analytic = -numerical everywhere: a sign is flipped in the backward."]
    fail = block.failing
    if _close(a[fail], -n[fail]):
        return [
            f"On every failing cell analytic = -numerical, the others agree: a sign(...) factor or a minus "
            f"is missing for some {in_name} entries (check abs/sign/relu-like terms)."
        ]
    nn = float(np.vdot(n, n))
    if nn > 0:
        factor = float(np.vdot(a, n)) / nn
        if abs(factor - 1) > 1e-3 and _close(a, factor * n):
            return [
                f"Analytic ≈ {factor:.4g} × numerical everywhere: a constant factor is wrong in the backward."
            ]
    if _transposed_match(block):
        return [
            f"The gradient for {in_name} matches the numerical one transposed: a .t() is missing or extra."
        ]
    leak = (n == 0) & (a != 0)
    if np.any(leak) and not np.any(block.failing & ~leak):
        return [
            f"Every failing cell has a numerical derivative of exactly 0: the backward sends gradient into "
            f"{in_name} entries the forward ignores (a mask or slice is missing in backward)."
        ]
    rows_failing = np.flatnonzero(fail.any(axis=1))
    cols_failing = np.flatnonzero(fail.any(axis=0))
    if len(cols_failing) < fail.shape[1] and len(cols_failing) <= 8:
        names = ", ".join(format_index(in_name, block.cell_index(0, c)[1]) for c in cols_failing)
        hints.append(f"Only some {in_name} entries fail: {names}.")
    elif len(rows_failing) < fail.shape[0] and len(rows_failing) <= 8:
        names = ", ".join(format_index(f"out{block.output}", block.cell_index(r, 0)[0]) for r in rows_failing)
        hints.append(f"Only some output entries fail: {names}.")
    return hints


def _transposed_match(block: BlockComparison) -> bool:
    shape = block.in_shape
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
        return False
    rows = block.analytic.shape[0]
    a_t = block.analytic.reshape(rows, *shape).transpose(0, 2, 1).reshape(rows, -1)
    return _close(a_t, block.numerical)
