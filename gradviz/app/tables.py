"""A check's numbers as files and tables for elsewhere: each block's Jacobians, error map and failing
mask as CSV and one ``.npz``, the worst cells as a Markdown or LaTeX table for notes and slides.

NumPy and the standard library only, so it is tested without a display.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gradviz.schema.results import BlockComparison, CheckResult, LargeBlock

ARRAYS = ("analytic", "numerical", "error", "failing")
WORST = 10  # cells in a copied table


@dataclass(frozen=True)
class CellRow:
    label: str
    analytic: float
    numerical: float
    error: float
    allowed: float | None  # atol + rtol * |numerical|; None for a cell of a searched block
    fails: bool


def number(value: float) -> str:
    """Four significant figures, and 0 for -0."""
    return f"{value + 0.0:.4g}"


def worst_cells(result: CheckResult, block: BlockComparison | LargeBlock, limit: int = WORST) -> list[CellRow]:
    """The cells of ``block`` with the largest |a - n|, failing ones first."""
    tolerance = result.settings.tolerance()
    if isinstance(block, LargeBlock):
        cells = sorted(block.cells, key=lambda c: -abs(c.analytic - c.numerical))[:limit]
        return [
            CellRow(result.cell_label(block, c.row, c.col), c.analytic, c.numerical, abs(c.analytic - c.numerical),
                    tolerance.bound(c.numerical), True)
            for c in cells
        ]
    error = np.where(np.isfinite(block.error), block.error, np.inf)
    # failing cells first, then by error, largest first
    order = np.lexsort((-error.ravel(), ~block.failing.ravel()))[:limit]
    rows = []
    for flat in order:
        r, c = np.unravel_index(int(flat), block.shape)
        a, n = float(block.analytic[r, c]), float(block.numerical[r, c])
        rows.append(CellRow(result.cell_label(block, int(r), int(c)), a, n, abs(a - n), tolerance.bound(n),
                            bool(block.failing[r, c])))
    return rows


HEADER = ("cell", "analytic", "numerical", "|a − n|", "allowed", "")


def markdown_table(rows: list[CellRow]) -> str:
    lines = ["| " + " | ".join(HEADER[:5]) + " | |", "|---|---:|---:|---:|---:|---|"]
    for row in rows:
        allowed = number(row.allowed) if row.allowed is not None else "—"
        mark = "fails" if row.fails else "ok"
        lines.append(
            f"| `{row.label}` | {number(row.analytic)} | {number(row.numerical)} | {row.error:.2g} | {allowed} | {mark} |"
        )
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    for char, replacement in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#")):
        text = text.replace(char, replacement)
    return text


def latex_table(rows: list[CellRow]) -> str:
    lines = [
        r"\begin{tabular}{lrrrrl}",
        r"\hline",
        r"cell & analytic & numerical & $|a - n|$ & allowed & \\",
        r"\hline",
    ]
    for row in rows:
        allowed = number(row.allowed) if row.allowed is not None else "--"
        mark = "fails" if row.fails else "ok"
        lines.append(
            rf"\texttt{{{_latex_escape(row.label)}}} & {number(row.analytic)} & {number(row.numerical)} & "
            rf"{row.error:.2g} & {allowed} & {mark} \\"
        )
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def block_key(block: BlockComparison) -> str:
    return f"o{block.output}_i{block.input}"


def write_arrays(result: CheckResult, folder: Path, stem: str) -> list[Path]:
    """Every block's analytic, numerical, error and failing arrays: one CSV each (rows x cols,
    full precision) and all of them in ``<stem>_jacobians.npz``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise OSError(f"Could not write to {folder}: the folder does not exist.")
    written = []
    arrays = {}
    for block in result.blocks:
        for kind in ARRAYS:
            data = getattr(block, kind)
            name = f"{kind}_{block_key(block)}"
            arrays[name] = data
            path = folder / f"{stem}_{name}.csv"
            fmt = "%d" if kind == "failing" else "%.17g"
            np.savetxt(path, data.astype(np.int8) if kind == "failing" else data, delimiter=",", fmt=fmt)
            written.append(path)
    for block in result.large_blocks:  # what was computed of a block too large to hold: its cells
        key = f"o{block.output}_i{block.input}"
        arrays[f"large_cells_{key}"] = np.array(
            [(c.row, c.col, c.analytic, c.numerical) for c in block.cells], dtype=float
        ).reshape(-1, 4)
    path = folder / f"{stem}_jacobians.npz"
    np.savez_compressed(path, **arrays)
    written.append(path)
    return written
