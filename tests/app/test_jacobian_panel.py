"""The Jacobian panel renders real CheckResults (built by the core from the built-in examples)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF
from PySide6.QtGui import QImage

from gradviz.app.display import OUTLINE_LIMIT, pool_max_abs
from gradviz.app.figures import EXPORT_WIDTH
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.schema.report import cell_readout
from gradviz.schema.results import BlockComparison, CheckResult, TensorInfo
from gradviz.schema.settings import CheckSettings
from tests.paths import ARTIFACTS


@pytest.fixture
def panel(qtbot):
    widget = JacobianPanel()
    qtbot.addWidget(widget)
    widget.resize(1500, 650)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def images(panel):
    return panel.analytic_image, panel.numerical_image, panel.error_image


def shown(panel, values: np.ndarray) -> np.ndarray:
    """``values`` as the panel draws them at its downsampling (block max |value|)."""
    factor = panel.downsampling()
    return values.astype(np.float32) if factor == 1 else pool_max_abs(values, factor)


def pooled_shape(panel, block) -> tuple[int, int]:
    f = panel.downsampling()
    return -(-block.shape[0] // f), -(-block.shape[1] // f)


def cell_of_rect(rect) -> tuple[int, int]:
    r = rect.rect()
    return round(r.center().y()), round(r.center().x())


def assert_cells_centred(panel, block) -> None:
    """Every image covers exactly the block, cell (r, c) centred on (c, r); row 0 at the top."""
    rows, cols = block.shape
    f = panel.downsampling()  # a pooled image covers whole tiles
    for image in images(panel):
        assert image.mapRectToParent(image.boundingRect()) == QRectF(-0.5, -0.5, -(-cols // f) * f, -(-rows // f) * f)
    for plot in panel.plot_items:
        assert plot.getViewBox().yInverted()


def test_empty_panel_says_what_to_do(panel):
    assert panel.current_block() is None
    assert panel.highlighted_cell() is None
    assert "run a check" in panel.readout.text()
    assert not panel.block_selector.isVisible()


def test_passing_builtin_shows_its_only_block(qtbot, panel, make_check_result):
    result = make_check_result("linear")
    panel.set_result(result)
    assert result.passed
    titles = [panel.block_selector.itemText(k) for k in range(panel.block_selector.count())]
    assert titles == [f"{result.block_title(b)}   ✓" for b in result.blocks]
    assert panel.block_selector.isVisible() == (len(result.blocks) > 1)
    block = panel.current_block()
    assert block is result.blocks[0]
    for image in images(panel):
        assert image.image.shape == pooled_shape(panel, block)
    assert panel.highlighted_cell() is None  # nothing to point at in a passing block
    assert "hover a cell" in panel.readout.text()
    assert panel.failing_outline.cells() == []


def test_failing_builtin_defaults_to_first_failing_block(qtbot, panel, make_check_result):
    result = make_check_result("buggy_linear_bias_axis")
    with qtbot.waitSignal(panel.block_changed) as blocker:
        panel.set_result(result)
    first_failing = next(k for k, b in enumerate(result.blocks) if not b.passed)
    assert blocker.args == [first_failing]
    assert panel.block_selector.isVisible()
    assert panel.block_selector.currentIndex() == first_failing
    for k, b in enumerate(result.blocks):
        mark = "✓" if b.passed else f"✗ {b.n_failing:,} failing"
        assert panel.block_selector.itemText(k) == f"{result.block_title(b)}   {mark}"
    block = panel.current_block()
    assert result.inputs[block.input].name == "bias"
    for image in images(panel):
        assert image.image.shape == pooled_shape(panel, block)
        assert image.image.dtype == np.float32 and image.image.flags.c_contiguous
    assert_cells_centred(panel, block)
    # one colour bar: analytic and numerical share levels, symmetric over both
    top = max(np.abs(block.analytic).max(), np.abs(block.numerical).max())
    levels = panel.analytic_image.getLevels()
    assert list(levels) == list(panel.numerical_image.getLevels()) == list(panel.value_bar.levels())
    assert levels[0] == pytest.approx(-top) and levels[1] == pytest.approx(top)
    assert list(panel.error_image.getLevels()) == list(panel.error_bar.levels())
    # the outlines mark exactly the failing cells; the images keep their true colours
    np.testing.assert_array_equal(panel.analytic_image.image, shown(panel, block.analytic))
    rows, cols = np.nonzero(block.failing)
    assert sorted(panel.failing_outline.cells()) == sorted(zip(rows.tolist(), cols.tolist()))
    # the worst cell is highlighted and read out from the start
    assert panel.highlighted_cell() == block.worst
    assert panel.readout.text() == cell_readout(result, block, *block.worst)


def test_hover_by_real_mouse_movement(qtbot, panel, make_check_result):
    result = make_check_result("buggy_square_factor")
    panel.set_result(result)
    block = panel.current_block()
    rows, cols = block.shape
    hovered = []
    panel.cellHovered.connect(lambda r, c: hovered.append((r, c)))

    wiggle = iter(range(1_000_000))

    def move_to(plot, row, col) -> bool:
        """Mouse to the cell's centre, mapped afresh (the layout settles after the first paint),
        wiggling a pixel each try: pyqtgraph drops a move within 10 ms of the last, Qt a repeat."""
        scene_pos = plot.getViewBox().mapViewToScene(QPointF(col, row))
        pos = panel.plots.mapFromScene(scene_pos) + QPoint(next(wiggle) % 2, 0)
        qtbot.mouseMove(panel.plots.viewport(), pos)
        return panel.readout.text() == cell_readout(result, block, row, col)

    targets = [(rows - 1, 0), (0, cols - 1), (rows // 2, cols // 2 + 1)]
    for plot, (row, col) in zip(panel.plot_items, targets):
        qtbot.waitUntil(lambda p=plot, r=row, c=col: move_to(p, r, c))
        assert hovered[-1] == (row, col)
        assert panel.highlighted_cell() == (row, col)
        assert [cell_of_rect(rect) for rect in panel.highlight_rects] == [(row, col)] * 3
        assert all(rect.isVisible() for rect in panel.highlight_rects)


def test_hover_cell_does_what_the_mouse_does(qtbot, panel, make_check_result):
    result = make_check_result("buggy_abs_product_sign")
    panel.set_result(result)
    block = panel.current_block()
    with qtbot.waitSignal(panel.cellHovered) as blocker:
        panel.hover_cell(1, 2)
    assert blocker.args == [1, 2]
    assert panel.highlighted_cell() == (1, 2)
    assert [cell_of_rect(rect) for rect in panel.highlight_rects] == [(1, 2)] * 3
    assert panel.readout.text() == cell_readout(result, block, 1, 2)
    panel.hover_cell(*block.shape)  # outside the block: ignored
    assert panel.highlighted_cell() == (1, 2)


def test_switching_blocks_updates_images_and_readout(qtbot, panel, make_check_result):
    result = make_check_result("buggy_linear_bias_axis")
    panel.set_result(result)
    panel.hover_cell(0, 0)
    for k, block in enumerate(result.blocks):
        with qtbot.waitSignal(panel.block_changed):
            panel.block_selector.setCurrentIndex(k)  # through the widget, as the user does
        assert panel.current_block() is block
        assert panel.analytic_image.image.shape == pooled_shape(panel, block)
        np.testing.assert_array_equal(panel.analytic_image.image, shown(panel, block.analytic))
        np.testing.assert_array_equal(panel.numerical_image.image, shown(panel, block.numerical))
        rows, cols = np.nonzero(block.failing)
        if panel.downsampling() == 1:
            assert sorted(panel.failing_outline.cells()) == sorted(zip(rows.tolist(), cols.tolist()))
        assert_cells_centred(panel, block)
        assert panel.highlighted_cell() == (0, 0)  # the cell stays put; its values change
        assert panel.readout.text() == cell_readout(result, block, 0, 0)


def test_go_to_worst_cell(qtbot, panel, make_check_result):
    result = make_check_result("buggy_kill_head_leak")
    panel.set_result(result)
    block = panel.current_block()
    panel.hover_cell(0, 0)
    with qtbot.waitSignal(panel.cellHovered) as blocker:
        panel.worst_button.click()
    assert tuple(blocker.args) == block.worst
    assert panel.readout.text() == cell_readout(result, block, *block.worst)
    assert result.cell_label(block, *block.worst) in panel.worst_button.toolTip()


def test_log_scale_changes_the_error_levels(qtbot, panel, make_check_result):
    result = make_check_result("buggy_silu_term")
    panel.set_result(result)
    block = panel.current_block()
    linear = tuple(panel.error_image.getLevels())
    assert linear[0] == 0 and linear[1] == pytest.approx(block.error[np.isfinite(block.error)].max())
    panel.log_scale.setChecked(True)
    log = tuple(panel.error_image.getLevels())
    assert log != linear and log == tuple(panel.error_bar.levels())
    assert log[0] < log[1] < 1 and log[1] == pytest.approx(np.log10(linear[1]), rel=1e-5)
    assert panel.error_image.image.max() <= log[1] + 1e-5
    assert "log10" in panel.error_bar.axis.labelText
    panel.log_scale.setChecked(False)
    assert tuple(panel.error_image.getLevels()) == linear


def test_set_result_none_clears(qtbot, panel, make_check_result):
    panel.set_result(make_check_result("buggy_square_factor"))
    panel.set_result(None)
    assert panel.current_block() is None
    assert panel.highlighted_cell() is None
    assert all(image.image is None for image in images(panel))
    assert panel.failing_outline.cells() == []
    assert not any(rect.isVisible() for rect in panel.highlight_rects)
    assert panel.block_selector.count() == 0 and not panel.block_selector.isVisible()
    assert "run a check" in panel.readout.text()
    panel.hover_cell(0, 0)  # nothing to hover: no error
    assert panel.highlighted_cell() is None


def test_export_png_is_slide_sized(qtbot, panel, make_check_result, tmp_path):
    panel.set_result(make_check_result("buggy_square_factor"))
    path = tmp_path / "jacobians.png"
    panel.export_png(str(path))
    image = QImage(str(path))
    assert not image.isNull()
    assert image.width() == EXPORT_WIDTH >= 1600


def big_result(n: int = 2000, seed: int = 0) -> CheckResult:
    """Two n x n blocks made directly (no core run): a few scattered failing cells each."""
    rng = np.random.default_rng(seed)
    settings = CheckSettings(atol=1e-5, rtol=1e-3)
    blocks = []
    for k in range(2):
        analytic = rng.standard_normal((n, n))
        numerical = analytic + 1e-8 * rng.standard_normal((n, n))
        analytic[rng.integers(0, n, 50), rng.integers(0, n, 50)] += 1.0
        error = np.abs(analytic - numerical).astype(np.float32)
        failing = error > settings.tolerance().bound(numerical)
        worst = tuple(int(v) for v in np.unravel_index(np.argmax(error), error.shape))
        blocks.append(
            BlockComparison(
                output=0,
                input=k,
                out_shape=(n,),
                in_shape=(n,),
                analytic=analytic,
                numerical=numerical,
                error=error,
                failing=failing,
                max_abs_error=float(error.max()),
                n_failing=int(failing.sum()),
                n_nonfinite=0,
                worst=worst,
            )
        )
    inputs = [TensorInfo(k, name, (n,), "float64", True) for k, name in enumerate("xy")]
    outputs = [TensorInfo(0, "out0", (n,), "float64", True)]
    return CheckResult("big", "cpu", "float64", inputs, outputs, blocks, settings)


def test_2000x2000_block_stays_interactive(qtbot, panel):
    from PySide6.QtWidgets import QApplication

    result = big_result()
    panel.set_result(result)
    QApplication.processEvents()
    timings = {}
    for label, index in (("first visit", 1), ("revisit", 0), ("revisit", 1)):
        start = time.perf_counter()
        panel.set_block(index)
        QApplication.processEvents()  # includes the paint
        timings.setdefault(label, []).append(time.perf_counter() - start)
    print({k: [f"{1000 * s:.1f} ms" for s in v] for k, v in timings.items()})
    # how fast: bench/ui_latency.py (a timed assertion here would only measure the machine's load)
    # the overview is pooled with max: every failing cell still shows in it
    block = panel.current_block()
    f = panel.downsampling()  # cells per image pixel
    assert f > 1 and panel.error_image.image.shape == pooled_shape(panel, block)
    tiles = {(r // f * f, c // f * f) for r, c in zip(*np.nonzero(block.failing))}
    assert len(tiles) <= OUTLINE_LIMIT and set(panel.failing_outline.cells()) == tiles
    # zooming in to the worst cell swaps in the full-resolution images
    panel.go_to_worst()
    assert panel.analytic_image.image.shape == block.shape
    assert panel.readout.text() == cell_readout(result, block, *block.worst)


def test_screenshot_of_a_failing_example(qtbot, panel, make_check_result):
    result = make_check_result("buggy_linear_transpose")
    panel.set_result(result)
    block = panel.current_block()
    r, c = block.worst
    panel.hover_cell(r, c)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "jacobian_panel.png"
    assert panel.grab().save(str(path))
    assert QImage(str(path)).width() == panel.width()
