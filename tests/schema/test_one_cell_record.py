"""One record of a Jacobian cell: the failure message's cells and the window's copied worst cells
are the same ``mismatch.Cell``, so both say the same about a cell; only failing cells are copied."""

from __future__ import annotations

import numpy as np
import pytest

from gradviz.app import tables  # the window copies these cells (NumPy only: no display needed)
from gradviz.core.check import check_source
from gradviz.core.loader import load_file
from gradviz.schema.library import find_builtin
from gradviz.schema.mismatch import Cell, cell, failing_cells


@pytest.fixture(scope="module")
def result():
    return check_source(load_file(find_builtin("buggy_linear_transpose")))


def test_the_worst_cells_of_a_block_are_the_message_cells(result):
    block = next(b for b in result.blocks if not b.passed)
    rows = tables.worst_cells(result, block, limit=3)
    assert all(isinstance(r, Cell) for r in rows)
    failing = [c for c in failing_cells(result) if (c.output, c.input) == (block.output, block.input)]
    assert rows[0] == failing[0] and rows[0].fails
    assert [r.label for r in rows] == [c.label for c in failing[:3]]


def test_the_copied_cells_are_the_failing_ones_and_a_passing_cell_says_ok(result):
    block = next(b for b in result.blocks if b.passed or b.n_failing < b.analytic.size)
    rows = tables.worst_cells(result, block, limit=block.analytic.size)
    assert len(rows) == int(block.failing.sum()) == block.n_failing and all(r.fails for r in rows)
    r, c = (int(i[0]) for i in np.nonzero(~block.failing))  # a cell the check's rule passes
    passing = cell(result, block, r, c)
    assert not passing.fails
    assert "| ok |" in tables.markdown_table([passing])
