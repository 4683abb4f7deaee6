"""The window and the saved figures pool a block the same way and colour it on
the same levels. The panel's images (what pyqtgraph draws) coloured on the panel's levels equal
the figure's cell colours at the same pooling, map for map."""

from __future__ import annotations

import numpy as np
import pytest

from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.render.figure import Layout, cell_colours, levels
from gradviz.render.png import DIVERGING, SEQUENTIAL, colorize
from tests.app.jacobian_sources import SQUARE_900


@pytest.fixture
def panel(qtbot):
    widget = JacobianPanel()
    qtbot.addWidget(widget)
    widget.resize(1280, 560)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_window_and_figure_pool_and_level_a_block_alike(qtbot, panel, make_check_result):
    result = make_check_result(source=SQUARE_900)  # a 900x900 diagonal, half of it failing
    panel.set_result(result)
    block = panel.current_block()
    factor = panel.downsampling()
    assert factor > 1  # the window pools this block at this size
    rows, cols = block.shape
    layout = Layout(factor, factor, -(-rows // factor), -(-cols // factor), 1, 1)  # the figure at the window's pooling
    figure_levels = levels(block, result.settings.atol)
    window_levels = {
        "analytic": tuple(panel.analytic_image.getLevels()),
        "numerical": tuple(panel.numerical_image.getLevels()),
        "error": tuple(panel.error_image.getLevels()),
    }
    assert window_levels == figure_levels
    images = {"analytic": panel.analytic_image, "numerical": panel.numerical_image, "error": panel.error_image}
    for kind, image in images.items():
        table = SEQUENTIAL if kind == "error" else DIVERGING
        shown = colorize(image.image, window_levels[kind], table)
        np.testing.assert_array_equal(cell_colours(block, kind, layout, figure_levels[kind]), shown, err_msg=kind)
