"""Edit → Copy worst cells, through the real Jacobian panel and a real check: only cells that fail
under the check's rule are copied (at most ten, worst first), the status bar gives their true
count, and a block where nothing fails copies nothing and says so."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QWidget

from gradviz.app.exports import Exports
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.state import CurrentResult, SourceDocument
from gradviz.schema.mismatch import WORST_COPIED, cell_errors

# out = 2x + 3w + v. The backward is wrong at three elements of x, at every element of w (4g, not
# 3g) and right for v: blocks with 3, 16 and 0 failing cells; every other cell has |a - n| = 0.
SOURCE = '''
import torch
from torch.autograd import Function


class Mixed(Function):
    @staticmethod
    def forward(ctx, x, w, v):
        return 2 * x + 3 * w + v

    @staticmethod
    def backward(ctx, g):
        bump = torch.zeros_like(g)
        bump[:3] = 1.0
        return 2 * g + bump * g, 4 * g, g


def example_inputs(device, dtype):
    return tuple(torch.randn(16, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
'''


@pytest.fixture
def copying(qtbot, tmp_path, make_check_result):
    """Exports over a real JacobianPanel showing a real result; what the status bar said."""
    parent, panel = QWidget(), JacobianPanel()
    qtbot.addWidget(parent)
    qtbot.addWidget(panel)
    current, said = CurrentResult(), []
    current.result = make_check_result(source=SOURCE)
    panel.set_result(current.result)
    exports = Exports(
        parent,
        settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
        current=current,
        document=SourceDocument(),
        jacobians=panel,
        graph=panel,
        memory=panel,
        say=lambda text, _ms: said.append(text),
    )
    return exports, panel, said


def copied_rows(text: str) -> list[list[str]]:
    """The body rows of the copied Markdown table, cell by cell."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:]]


def failing_labels_worst_first(result, block) -> list[str]:
    """The block's failing cells by the check's own mask, worst |a - n| first (ties row-major)."""
    rows, cols = np.nonzero(block.failing)
    errors = cell_errors(block.analytic[rows, cols], block.numerical[rows, cols])
    order = np.argsort(-errors, kind="stable")
    return [result.cell_label(block, int(rows[k]), int(cols[k])) for k in order]


@pytest.mark.parametrize("input_name", ["x", "w"])
def test_only_failing_cells_are_copied_with_their_true_count(copying, input_name):
    exports, panel, said = copying
    result = exports.current.result
    index = next(k for k, b in enumerate(result.blocks) if result.inputs[b.input].name == input_name)
    panel.set_block(index)
    block = panel.current_block()
    expected = failing_labels_worst_first(result, block)
    assert 0 < block.n_failing == len(expected) < block.analytic.size  # some cells pass, with error 0
    assert np.count_nonzero(cell_errors(block.analytic, block.numerical) == 0) > 0
    text = exports.copy_worst_cells("markdown")
    rows = copied_rows(text)
    assert QApplication.clipboard().text() == text
    assert [r[0].strip("`") for r in rows] == expected[:WORST_COPIED]
    assert {r[-1] for r in rows} == {"fails"}
    title = result.block_title(block)
    if len(expected) <= WORST_COPIED:
        assert said == [f"Copied the {len(expected)} failing cells of {title} as markdown"]
    else:
        assert said == [f"Copied the {WORST_COPIED} worst of {len(expected)} failing cells of {title} as markdown"]


def test_a_block_where_nothing_fails_copies_nothing_and_says_so(copying):
    exports, panel, said = copying
    result = exports.current.result
    index = next(k for k, b in enumerate(result.blocks) if result.inputs[b.input].name == "v")
    panel.set_block(index)
    assert panel.current_block().passed and not panel.current_block().failing.any()
    QApplication.clipboard().setText("the user's own clipboard")
    assert exports.copy_worst_cells("latex") == ""
    assert QApplication.clipboard().text() == "the user's own clipboard"
    assert said == [f"Nothing copied: there is no failing cell in {result.block_title(panel.current_block())}."]
