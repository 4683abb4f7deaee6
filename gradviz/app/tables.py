"""A check's numbers as files and tables for elsewhere: each block's Jacobians, error map and failing
mask as CSV and one ``.npz``, the worst cells as a Markdown or LaTeX table for notes and slides.

A CSV is the matrix as the heatmap shows it, with a header row: the first line names rows and
columns ("out0 element \\ x element (flat indices)") and numbers the columns; every other line
starts with its row number. Rows are the output's elements, columns the input's, both flattened
in C order (as ``cell_label`` counts them); ``read_block_csv`` reads one back.

NumPy and the standard library only, so it is tested without a display.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gradviz.schema.array_files import ARRAYS, block_key, write_csv, write_npz
from gradviz.schema.mismatch import Cell
from gradviz.schema.mismatch import n_failing as n_failing  # the exports pick the cells here
from gradviz.schema.mismatch import worst_cells as worst_cells
from gradviz.schema.results import BlockComparison, CheckResult


def number(value: float) -> str:
    """Four significant figures, and 0 for -0."""
    return f"{value + 0.0:.4g}"


HEADER = ("cell", "analytic", "numerical", "|a − n|", "allowed", "verdict")


def markdown_cell(text: str) -> str:
    """A GFM table cell: ``|`` would end the cell (inside backticks too: GFM splits the row
    before it reads code spans), so it is escaped; a line break would end the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[Cell]) -> str:
    """A GitHub-flavoured Markdown table: a header, its delimiter row, one row per cell."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(markdown_cell(c) for c in cells) + " |"

    lines = [line(list(HEADER)), "|---|---:|---:|---:|---:|---|"]
    for row in rows:
        allowed = number(row.allowed)
        mark = "fails" if row.fails else "ok"
        lines.append(
            line([f"`{row.label}`", number(row.analytic), number(row.numerical), f"{row.error:.2g}", allowed, mark])
        )
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    for char, replacement in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#")):
        text = text.replace(char, replacement)
    return text


def latex_table(rows: list[Cell]) -> str:
    lines = [
        r"\begin{tabular}{lrrrrl}",
        r"\hline",
        r"cell & analytic & numerical & $|a - n|$ & allowed & \\",
        r"\hline",
    ]
    for row in rows:
        allowed = number(row.allowed)
        mark = "fails" if row.fails else "ok"
        lines.append(
            rf"\texttt{{{_latex_escape(row.label)}}} & {number(row.analytic)} & {number(row.numerical)} & "
            rf"{row.error:.2g} & {allowed} & {mark} \\"
        )
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def csv_header(result: CheckResult, block: BlockComparison) -> str:
    """The header row of a block's CSV: the corner names what rows and columns are, then the
    column numbers. Row ``r`` is element ``r`` of the output flattened in C order, column ``c``
    element ``c`` of the input; the first value of each line is its row number."""
    corner = f"out{block.output} element \\ {result.inputs[block.input].name} element (flat indices)"
    return ",".join([corner, *map(str, range(block.shape[1]))])


def write_block_csv(path: Path, result: CheckResult, block: BlockComparison, kind: str) -> None:
    """One array of a block as CSV: a header row, then per output element its row number and one
    value per input element (full precision; 0/1 for ``failing``)."""
    data = getattr(block, kind)
    values = data.astype(np.int8) if kind == "failing" else data
    table = np.column_stack([np.arange(block.shape[0]), values])
    fmt = ["%d"] + ["%d" if kind == "failing" else "%.17g"] * block.shape[1]
    write_csv(path, table, fmt=fmt, header=csv_header(result, block))


def read_block_csv(path: Path) -> np.ndarray:
    """The array a block's CSV holds (without its header row and row numbers)."""
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)[:, 1:]


def write_arrays(result: CheckResult, folder: Path, stem: str) -> list[Path]:
    """Every block's analytic, numerical, error and failing arrays: one CSV each (a header row,
    then one line per output element, full precision) and all of them in ``<stem>_jacobians.npz``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise OSError(f"Could not write to {folder}: the folder does not exist.")
    written = []
    arrays = {}
    for block in result.blocks:
        for kind in ARRAYS:
            name = f"{kind}_{block_key(block)}"
            arrays[name] = getattr(block, kind)
            path = folder / f"{stem}_{name}.csv"
            write_block_csv(path, result, block, kind)
            written.append(path)
    for block in result.large_blocks:  # what was computed of a block too large to hold: its cells
        arrays[f"large_cells_{block_key(block)}"] = np.array(
            [(c.row, c.col, c.analytic, c.numerical) for c in block.cells], dtype=float
        ).reshape(-1, 4)
    path = folder / f"{stem}_jacobians.npz"
    written.append(write_npz(path, arrays))
    return written
