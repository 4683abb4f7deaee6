"""A failed check as ``torch.testing.assert_close`` would word it: counts, the worst cell, the table.

Torch-free text from a CheckResult, so a test failure, the notebook and the CLI can name the
same cells in the same words. Cells are ordered worst first; a NaN or infinite error counts as
the worst of all, as it fails whatever the tolerance.

There is one ranking of cells, ``cell_errors``: |a - n| in float64 from the two Jacobians, ties in
row-major order (blocks in their order). The compare's worst cell (``BlockComparison.worst``: the
headline, JSON ``worst_cell``, the window's highlight), ``failing_cells`` and ``worst_cells`` all
rank by it; the float32 error map is for display only, and would tie cells that differ below
float32's resolution.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gradviz.schema.results import (
    NOT_THE_VERDICT,
    WARNED,
    BlockComparison,
    CheckResult,
    FoundCell,
    LargeBlock,
)

WORST_SHOWN = 5  # cells in the table under a failure message
WORST_COPIED = 10  # cells in a table the window copies


class Cell(NamedTuple):
    """One Jacobian cell: where it lives, where it comes from, both values and the allowed error;
    the one record of a cell for the failure message, ``Report.failing_cells`` and the window's
    copied tables."""

    output: int
    input: int
    row: int
    col: int
    out_index: tuple[int, ...]
    in_index: tuple[int, ...]
    label: str  # out0[2,1] / x[2,1]
    analytic: float
    numerical: float
    error: float
    allowed: float
    fails: bool = True  # outside the tolerance (every cell of failing_cells does)


def cell_errors(analytic: np.ndarray, numerical: np.ndarray) -> np.ndarray:
    """|a - n| in float64, the key every ranking of cells sorts by: inf where a, n or a - n is not
    finite (a NaN, a lone infinity, an overflow), 0 for equal infinities, as the compare counts them.

    Args:
        analytic: the backward's values at some cells (any shape).
        numerical: the central differences at the same cells.

    Returns:
        A float64 array of ``analytic``'s shape.
    """
    a, n = np.asarray(analytic, dtype=np.float64), np.asarray(numerical, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.abs(a - n)
    finite = np.isfinite(e)
    if not finite.all():
        e = np.where(finite, e, np.where(a == n, 0.0, np.inf))
    return np.asarray(e, dtype=np.float64)


def cell_error(analytic: float, numerical: float) -> float:
    """``cell_errors`` of one cell."""
    return float(cell_errors(np.array([analytic]), np.array([numerical]))[0])


def cell(result: CheckResult, block: BlockComparison, row: int, col: int) -> Cell:
    """Cell ``(row, col)`` of ``block`` with its label and gradcheck's allowed error there."""
    out_idx, in_idx = block.cell_index(row, col)
    a, n = float(block.analytic[row, col]), float(block.numerical[row, col])
    error = cell_error(a, n)
    return Cell(
        block.output,
        block.input,
        int(row),
        int(col),
        out_idx,
        in_idx,
        result.cell_label(block, row, col),
        a,
        n,
        error,
        float(result.settings.tolerance().bound(n)),
        bool(block.failing[row, col]),
    )


def found_cell(result: CheckResult, block: LargeBlock, found: FoundCell) -> Cell:
    """A cell the search of a block too large to hold found wrong (computed exactly, so it fails)."""
    out_idx, in_idx = block.cell_index(found.row, found.col)
    return Cell(
        block.output,
        block.input,
        found.row,
        found.col,
        out_idx,
        in_idx,
        result.cell_label(block, found.row, found.col),
        found.analytic,
        found.numerical,
        cell_error(found.analytic, found.numerical),
        float(result.settings.tolerance().bound(found.numerical)),
    )


def failing_cells(result: CheckResult, limit: int | None = None) -> list[Cell]:
    """The failing cells of every block, worst first by ``cell_errors``; at most ``limit`` of them.
    Blocks never held (``large_blocks``) give the cells their search found."""
    found: list[tuple[float, int, int, int]] = []  # (-error, block position, row, col): sorts worst first
    for position, block in enumerate(result.blocks):
        if block.passed:
            continue
        rows, cols = np.nonzero(block.failing)  # row-major
        keys = cell_errors(block.analytic[rows, cols], block.numerical[rows, cols])
        if limit is not None and len(keys) > limit:  # the worst few of millions without a full sort
            keep = _largest(keys, limit)
            rows, cols, keys = rows[keep], cols[keep], keys[keep]
        found += [(-float(e), position, int(r), int(c)) for e, r, c in zip(keys, rows, cols)]
    found.sort()
    if limit is not None:
        found = found[:limit]
    cells = [cell(result, result.blocks[position], r, c) for _, position, r, c in found]
    searched = [found_cell(result, b, c) for b in result.large_blocks for c in b.cells]  # never held: found
    if searched:
        cells = sorted([*cells, *searched], key=lambda c: -c.error)[:limit]
    return cells


def _largest(keys: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the ``limit`` largest keys, worst first, ties in the order given."""
    threshold = np.partition(keys, len(keys) - limit)[len(keys) - limit]
    candidates = np.flatnonzero(keys >= threshold)  # every tie at the threshold, in order
    return candidates[np.argsort(-keys[candidates], kind="stable")[:limit]]


def worst_cells(result: CheckResult, block: BlockComparison | LargeBlock, limit: int = WORST_COPIED) -> list[Cell]:
    """The failing cells of ``block``, worst first by ``cell_errors``, at most ``limit`` (the
    window copies them as a table). Only failing ones: a passing cell with |a - n| = 0 is no
    "worst cell". The failing mask is the check's rule; it is read, not recomputed."""
    if limit <= 0:
        return []
    if isinstance(block, LargeBlock):  # its cells are the failing ones its search found
        keys = cell_errors(np.array([c.analytic for c in block.cells]), np.array([c.numerical for c in block.cells]))
        return [found_cell(result, block, block.cells[k]) for k in np.argsort(-keys, kind="stable")[:limit]]
    rows, cols = np.nonzero(block.failing)  # row-major, so ties stay in reading order
    keys = cell_errors(block.analytic[rows, cols], block.numerical[rows, cols])
    keep = _largest(keys, limit) if len(keys) > limit else np.argsort(-keys, kind="stable")
    return [cell(result, block, int(rows[k]), int(cols[k])) for k in keep]


def n_failing(block: BlockComparison | LargeBlock) -> int:
    """How many cells of ``block`` fail: the compare's count, or the cells a search found."""
    return len(block.cells) if isinstance(block, LargeBlock) else block.n_failing


def mismatch_message(result: CheckResult, worst: int = WORST_SHOWN) -> str:
    """Why the check failed: one line per failing block, the failed checks, hints, warnings, the
    worst cells as a table."""
    s = result.settings
    lines = [
        f"{result.function}: {_what_fails(result)} fails gradcheck "
        f"(eps={s.eps:g}, atol={s.atol:g}, rtol={s.rtol:g}; a cell passes when |a - n| <= atol + rtol * |n|)",
        "",
    ]
    failed_blocks = sorted((b for b in result.blocks if not b.passed), key=_badness, reverse=True)
    for b in failed_blocks:
        lines.append(_block_line(result, b))
    failed_forward = sorted((b for b in result.forward_blocks if not b.passed), key=_badness, reverse=True)
    for b in failed_forward:  # check_forward_ad: the forward-mode Jacobian in "analytic"
        lines.append(f"Forward mode: {_block_line(result, b)}")
        lines += [f"Hint (forward mode, {result.block_title(b)}): {h}" for h in b.hints]
    for c in result.checks:
        if c.failed:
            lines.append(f"Failed check {c.name}: {c.detail}")
        elif c.status == WARNED:
            lines.append(f"Warned check {c.name} ({NOT_THE_VERDICT}): {c.detail}")
    for b in failed_blocks or result.blocks:
        lines += [f"Hint ({result.block_title(b)}): {h}" for h in b.hints]
    lines += [f"Warning: {w}" for w in result.warnings]
    cells = failing_cells(result, worst)
    if cells:
        lines += ["", f"Worst {'cell' if len(cells) == 1 else f'{len(cells)} cells'}:", *cell_table(cells)]
    return "\n".join(lines)


def _what_fails(result: CheckResult) -> str:
    """"the backward", or forward mode's jvp where only forward-mode blocks fail (check_forward_ad)."""
    if any(not b.passed for b in result.forward_blocks) and all(b.passed for b in result.blocks):
        return "the forward mode (jvp; analytic = forward-mode Jacobian)"
    return "the backward"


def _badness(block: BlockComparison) -> float:
    return np.inf if np.isnan(block.max_abs_error) else block.max_abs_error


def _block_line(result: CheckResult, b: BlockComparison) -> str:
    share = 100.0 * b.n_failing / b.analytic.size
    line = (
        f"Mismatched elements: {b.n_failing:,} / {b.analytic.size:,} ({share:.1f}%) in out{b.output} "
        f"w.r.t. {result.inputs[b.input].name}"
    )
    if b.worst is None:
        return line
    c = cell(result, b, *b.worst)
    return (
        f"{line}; greatest |a - n| {c.error:.3g} at {c.label} "
        f"(analytic {c.analytic:.3g}, numerical {c.numerical:.3g}, allowed {c.allowed:.2g})"
    )


def cell_table(cells: list[Cell]) -> list[str]:
    """Aligned rows: label, analytic, numerical, |a - n|, allowed."""
    width = max(len("cell"), *(len(c.label) for c in cells))
    rows = [f"  {'cell':<{width}}  {'analytic':>11} {'numerical':>11} {'|a - n|':>11} {'allowed':>11}"]
    for c in cells:
        rows.append(
            f"  {c.label:<{width}}  {c.analytic:>11.4g} {c.numerical:>11.4g} {c.error:>11.3g} {c.allowed:>11.2g}"
        )
    return rows
