"""Display prep without a display: NumPy in, NumPy out, checked against plain loops."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from gradviz.app.display import (
    LOG_FLOOR,
    OUTLINE_LIMIT,
    BlockDisplay,
    factor_for,
    first_block_index,
    pool_max_abs,
    prepare_displays,
)
from gradviz.render.pooling import pool_max
from gradviz.schema.results import BlockComparison, CheckResult, TensorInfo
from gradviz.schema.settings import CheckSettings
from tests.paths import ROOT


def make_block(analytic, numerical, *, atol=1e-5, rtol=1e-3, input=0) -> BlockComparison:
    analytic, numerical = np.asarray(analytic, dtype=float), np.asarray(numerical, dtype=float)
    error = np.abs(analytic - numerical)
    failing = error > atol + rtol * np.abs(numerical)
    worst = tuple(int(v) for v in np.unravel_index(np.argmax(error), error.shape)) if error.size else None
    return BlockComparison(
        output=0,
        input=input,
        out_shape=(analytic.shape[0],),
        in_shape=(analytic.shape[1],),
        analytic=analytic,
        numerical=numerical,
        error=error,
        failing=failing,
        max_abs_error=float(error.max(initial=0.0)),
        n_failing=int(failing.sum()),
        n_nonfinite=0,
        worst=worst,
    )


def make_result(*blocks: BlockComparison, atol=1e-5) -> CheckResult:
    inputs = [TensorInfo(k, f"x{k}", b.in_shape, "float64", True) for k, b in enumerate(blocks)]
    return CheckResult("f", "cpu", "float64", inputs, [TensorInfo(0, "out0", (1,), "float64", True)],
                       list(blocks), CheckSettings(atol=atol))


def pooled_by_loop(a: np.ndarray, f: int, reduce) -> np.ndarray:
    rows, cols = -(-a.shape[0] // f), -(-a.shape[1] // f)
    return np.array([[reduce(a[r * f:(r + 1) * f, c * f:(c + 1) * f]) for c in range(cols)] for r in range(rows)])


@pytest.mark.parametrize("shape", [(7, 5), (8, 8), (1, 9), (13, 1)])
@pytest.mark.parametrize("factor", [1, 2, 3])
def test_pool_max_is_the_max_of_each_tile(shape, factor):
    a = np.random.default_rng(0).standard_normal(shape)
    out = pool_max(a, factor)
    assert out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(out, pooled_by_loop(a, factor, np.max), rtol=1e-6, atol=1e-6)


def test_pool_max_abs_keeps_the_largest_magnitude_with_its_sign():
    a = np.random.default_rng(1).standard_normal((7, 9))
    expected = pooled_by_loop(a, 3, lambda tile: tile.flat[np.argmax(np.abs(tile))])
    np.testing.assert_allclose(pool_max_abs(a, 3), expected, rtol=1e-6)


def test_a_sparse_diagonal_stays_visible_when_downsampled():
    n = 3600
    analytic = np.zeros((n, n))
    analytic[np.arange(n), np.arange(n)] = -0.5  # tanh-like: negative, one per row
    display = BlockDisplay(make_block(analytic, analytic.copy()), 1e-5)
    factor = display.factor_for((n, n), (400, 400))
    assert factor == 12  # 3600 cells over 400 px: the first LADDER step with <= 1 image px per px
    image = display.image("analytic", factor)
    assert image.shape == (300, 300)
    np.testing.assert_array_equal(np.diag(image), np.full(300, -0.5, np.float32))  # the mean would be -0.04


def test_one_failing_cell_survives_the_downsampling():
    n = 3 * 512 + 7
    analytic = np.zeros((n, n))
    analytic[n - 1, 5] = 1.0  # the last row, in a tile only partly covered
    display = BlockDisplay(make_block(analytic, np.zeros((n, n))), 1e-5)
    overview = display.image("failing", 4)
    assert overview.shape == (-(-n // 4), -(-n // 4)) and overview.sum() == 1
    assert overview[-1, 5 // 4] == 1
    assert display.image("failing", 1).shape == (n, n)
    assert display.image("failing", 4) is overview  # made once, then kept


def test_levels_are_symmetric_over_both_and_the_error_scale_starts_at_atol():
    block = make_block([[1.0, -3.0], [0.5, 2.0]], [[1.0, -2.0], [0.5, 2.0]])
    display = BlockDisplay(block, 1e-5)
    assert display.value_levels == (-3.0, 3.0)
    assert display.error_top == 1.0
    passing = BlockDisplay(make_block([[1.0]], [[1.0 + 1e-9]]), 1e-5)
    assert passing.error_top == 1e-5  # round-off stays dark
    assert passing.log_levels[1] >= passing.log_levels[0] + 1.0
    zeros = BlockDisplay(make_block(np.zeros((2, 2)), np.zeros((2, 2))), 0.0)
    assert zeros.value_levels == (-1.0, 1.0) and zeros.error_top == LOG_FLOOR


def test_non_finite_errors_show_as_the_top_colour():
    block = make_block([[1.0, 2.0]], [[1.0, 0.0]])
    block.error[0, 0] = np.inf
    display = BlockDisplay(block, 1e-5)
    assert display.error_top == 2.0
    np.testing.assert_array_equal(display.image("error", 1), np.float32([[2.0, 2.0]]))
    log = display.image("log_error", 1)
    assert np.isfinite(log).all() and log.max() == pytest.approx(np.log10(2.0))


def test_failing_cells_are_outlined_up_to_the_limit():
    few = BlockDisplay(make_block([[0.0, 1.0], [1.0, 0.0]], np.zeros((2, 2))), 1e-5)
    x, y, width, height = few.outline(1)
    assert sorted(zip((y + 0.5).tolist(), (x + 0.5).tolist())) == [(0, 1), (1, 0)]  # cells centred on (c, r)
    assert width.tolist() == [1.0, 1.0] and height.tolist() == [1.0, 1.0]
    n = int(np.ceil(np.sqrt(OUTLINE_LIMIT + 1)))
    many = BlockDisplay(make_block(np.ones((n, n)), np.zeros((n, n))), 1e-5)
    assert many.outline(1) is None
    assert BlockDisplay(make_block(np.zeros((2, 2)), np.zeros((2, 2))), 1e-5).outline(1) is None


def test_pooled_outlines_cover_whole_tiles_clipped_at_the_edge():
    analytic = np.zeros((5, 5))
    analytic[4, 4] = 1.0
    display = BlockDisplay(make_block(analytic, np.zeros((5, 5))), 1e-5)
    x, y, width, height = display.outline(2)
    assert (x.tolist(), y.tolist(), width.tolist(), height.tolist()) == ([3.5], [3.5], [1.0], [1.0])


def test_extent_covers_whole_pooled_pixels_and_the_factor_follows_the_zoom():
    n = 1025
    display = BlockDisplay(make_block(np.zeros((n, 10)), np.zeros((n, 10))), 1e-5)
    assert display.extent(1) == (10, n) and display.extent(3) == (12, -(-n // 3) * 3)
    assert factor_for((n, n), (n, n), (400, 400)) == 3  # 2.6 cells a pixel
    assert factor_for((n, n), (200, 200), (400, 400)) == 1  # zoomed in: every cell
    assert factor_for((n, 10), (10, n), (400, 400)) == 3  # rows decide: 10 columns alone would not pool
    assert factor_for((4, 4), (4, 4), (1, 1)) == 4


def test_unknown_image_kind_is_refused():
    with pytest.raises(ValueError, match="no image kind"):
        BlockDisplay(make_block([[1.0]], [[1.0]]), 1e-5).image("gradient", 1)


def test_prepare_displays_makes_the_first_failing_block_ready():
    passing = make_block([[1.0]], [[1.0]], input=0)
    failing = make_block([[1.0, 5.0]], [[1.0, 0.0]], input=1)
    result = make_result(passing, failing, atol=0.25)
    assert first_block_index(result) == 1
    prepared = prepare_displays(result)
    assert list(prepared) == [1] and prepared[1].block is failing
    assert prepared[1].error_top == 5.0
    assert len(prepared[1]._images) == 4  # analytic, numerical, error, failing: made off the GUI thread
    assert first_block_index(make_result(passing)) == 0
    assert prepare_displays(make_result()) == {}


def test_display_prep_imports_without_qt():
    code = (
        "import sys\n"
        "for name in ('PySide6', 'pyqtgraph', 'torch'): sys.modules[name] = None\n"
        "import gradviz.app.display\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr


def test_the_readout_never_says_minus_zero():
    from gradviz.schema.report import cell_readout

    block = make_block([[-0.0, 1.0]], [[0.0, 1.0]])
    result = make_result(block)
    line = cell_readout(result, block, 0, 0)
    assert "analytic 0," in line and "analytic -0" not in line
