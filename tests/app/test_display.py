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
    OVERVIEW,
    BlockDisplay,
    first_block_index,
    pool,
    prepare_displays,
)
from gradviz.schema.results import BlockComparison, CheckResult, TensorInfo
from gradviz.schema.settings import CheckSettings
from tests.app.conftest import ROOT


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
def test_pool_is_the_mean_or_max_of_each_tile(shape, factor):
    a = np.random.default_rng(0).standard_normal(shape)
    for mean, reduce in ((True, np.mean), (False, np.max)):
        out = pool(a, factor, mean=mean)
        assert out.dtype == np.float32 and out.flags.c_contiguous
        np.testing.assert_allclose(out, pooled_by_loop(a, factor, reduce), rtol=1e-6, atol=1e-6)


def test_one_failing_cell_survives_the_overview():
    n = 3 * OVERVIEW + 7
    analytic = np.zeros((n, n))
    analytic[n - 1, 5] = 1.0  # the last row, in a tile only partly covered
    display = BlockDisplay(make_block(analytic, np.zeros((n, n))), 1e-5)
    assert display.factor == 4
    overview = display.image("failing", False)
    assert overview.shape == (-(-n // 4), -(-n // 4)) and overview.sum() == 1
    assert overview[-1, 5 // 4] == 1
    assert display.image("failing", True).shape == (n, n)
    assert display.image("failing", False) is overview  # made once, then kept


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
    np.testing.assert_array_equal(display.image("error", True), np.float32([[2.0, 2.0]]))
    log = display.image("log_error", True)
    assert np.isfinite(log).all() and log.max() == pytest.approx(np.log10(2.0))


def test_failing_cells_are_outlined_up_to_the_limit():
    few = BlockDisplay(make_block([[0.0, 1.0], [1.0, 0.0]], np.zeros((2, 2))), 1e-5)
    cols, rows = few.outline
    assert sorted(zip(rows.tolist(), cols.tolist())) == [(0, 1), (1, 0)]
    n = int(np.ceil(np.sqrt(OUTLINE_LIMIT + 1)))
    many = BlockDisplay(make_block(np.ones((n, n)), np.zeros((n, n))), 1e-5)
    assert many.outline is None
    assert BlockDisplay(make_block(np.zeros((2, 2)), np.zeros((2, 2))), 1e-5).outline is None


def test_extent_covers_whole_pooled_pixels_and_full_res_follows_the_zoom():
    n = 2 * OVERVIEW + 1
    display = BlockDisplay(make_block(np.zeros((n, 10)), np.zeros((n, 10))), 1e-5)
    assert display.factor == 3
    assert display.extent(True) == (10, n) and display.extent(False) == (12, -(-n // 3) * 3)
    square = BlockDisplay(make_block(np.zeros((n, n)), np.zeros((n, n))), 1e-5)
    assert not square.wants_full_res((n, n), (400, 400))  # 342 samples across 400 px: enough
    assert square.wants_full_res((200, n), (400, 400))  # zoomed in on x: 67 samples for 400 px
    assert display.wants_full_res((10, n), (400, 400))  # 10 columns pooled to 4 would blur them
    small = BlockDisplay(make_block(np.zeros((4, 4)), np.zeros((4, 4))), 1e-5)
    assert small.factor == 1 and small.wants_full_res((4, 4), (1, 1))


def test_unknown_image_kind_is_refused():
    with pytest.raises(ValueError, match="no image kind"):
        BlockDisplay(make_block([[1.0]], [[1.0]]), 1e-5).image("gradient", True)


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
