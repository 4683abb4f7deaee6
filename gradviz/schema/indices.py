"""Where a Jacobian cell comes from: row -> output index, column -> input index (C order).

NumPy only, so the GUI process (which never imports torch) labels cells with the same code
as the CLI.
"""

from __future__ import annotations

import numpy as np


def cell_index(
    row: int, col: int, out_shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(index into the output, index into the input)`` of Jacobian cell ``(row, col)``."""
    out_idx = tuple(int(v) for v in np.unravel_index(row, out_shape)) if out_shape else ()
    in_idx = tuple(int(v) for v in np.unravel_index(col, in_shape)) if in_shape else ()
    return out_idx, in_idx


def format_index(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{','.join(str(v) for v in index)}]"


def cell_label(output: int, out_idx: tuple[int, ...], input_name: str, in_idx: tuple[int, ...]) -> str:
    """``out0[3,1] / weight[2,0]``."""
    return f"{format_index(f'out{output}', out_idx)} / {format_index(input_name, in_idx)}"
