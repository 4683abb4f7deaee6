"""One pooling everywhere: the notebook and saved figures pool values as the window does, by the
largest |value| (gradviz.render.pooling), so each diagonal tile keeps its largest value (pooled by
the mean, a sparse diagonal would fade outside the window)."""

from __future__ import annotations

import numpy as np
import torch

import gradviz
from gradviz.render.figure import Layout, cell_colours, levels
from gradviz.render.png import DIVERGING, colorize
from gradviz.render.pooling import pool_max, pool_max_abs

N = 900  # a 900x900 block: pooled 4x4 to a pixel in a figure (PANEL = 240)


def cube(x: torch.Tensor) -> torch.Tensor:
    return x**3


def diagonal_check():
    """A real check of an elementwise function: its Jacobian is diagonal (3x^2), all else zero."""
    torch.manual_seed(0)
    x = torch.randn(N, dtype=torch.float64, requires_grad=True)
    report = gradviz.check(cube, (x,), raise_exception=False)
    (block,) = report.result.blocks
    return report, block


def largest_abs_per_tile(a: np.ndarray, pool_r: int, pool_c: int) -> np.ndarray:
    """The signed value of largest |value| in each tile, tile by tile (the expectation, computed
    independently of gradviz)."""
    rows, cols = -(-a.shape[0] // pool_r), -(-a.shape[1] // pool_c)
    out = np.zeros((rows, cols))
    for i in range(rows):
        for j in range(cols):
            tile = a[i * pool_r : (i + 1) * pool_r, j * pool_c : (j + 1) * pool_c]
            out[i, j] = tile.flat[np.argmax(np.abs(tile))]
    return out


def test_a_pooled_sparse_diagonal_keeps_its_full_colour_in_the_figures():
    report, block = diagonal_check()
    diagonal = np.diag(block.analytic)
    assert np.count_nonzero(block.analytic) == N and np.all(diagonal > 0)  # 3x^2 on the diagonal only
    layout = Layout.of(block.shape)
    assert layout.pool_r == layout.pool_c > 1  # the figure pools this block
    level = levels(block, report.result.settings.atol)["analytic"]
    top_value = float(max(np.abs(block.analytic).max(), np.abs(block.numerical).max()))
    assert level == (-top_value, top_value)  # symmetric about zero, one scale for both maps
    cells = cell_colours(block, "analytic", layout, level)
    expected = largest_abs_per_tile(block.analytic, layout.pool_r, layout.pool_c)
    np.testing.assert_array_equal(cells, colorize(expected, level, DIVERGING))
    # every diagonal pixel as strong as its strongest cell (a mean showed a quarter of it or less)
    for k in range(0, N, layout.pool_r):
        strongest = diagonal[k : k + layout.pool_r].max()
        assert tuple(cells[k // layout.pool_r, k // layout.pool_c]) == tuple(colorize(np.array([[strongest]]), level, DIVERGING)[0, 0])


def test_one_non_zero_cell_in_a_million_shows_at_full_value():
    """A single large derivative among zeros: its pixel has the top colour of the scale."""
    torch.manual_seed(0)
    x = torch.randn(1000, dtype=torch.float64, requires_grad=True)
    report = gradviz.check(lambda t: t[:1] * 5.0 + 0.0 * t.sum(), (x,), raise_exception=False)
    (block,) = report.result.blocks
    assert block.shape == (1, 1000)
    layout = Layout.of(block.shape)
    assert layout.pool_c > 1
    level = levels(block, report.result.settings.atol)["analytic"]
    cells = cell_colours(block, "analytic", layout, level)
    assert tuple(cells[0, 0]) == tuple(DIVERGING[-1])


def test_rectangular_tiles_keep_the_largest_magnitude_with_its_sign():
    """The figures pool rows and columns by different factors (a 1 x 1000 block: 1 x 5)."""
    a = np.random.default_rng(2).standard_normal((7, 11))
    np.testing.assert_allclose(pool_max_abs(a, 2, 3), largest_abs_per_tile(a, 2, 3), rtol=1e-6)
    expected_max = largest_abs_per_tile(a - a.min() + 1.0, 2, 3) + a.min() - 1.0  # all positive: max = max |.|
    np.testing.assert_allclose(pool_max(a, 2, 3), expected_max, rtol=1e-5, atol=1e-5)
