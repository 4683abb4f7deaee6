"""A region of a block too large to hold, computed on demand, held to PyTorch cell by cell.

The oracle restricts the Function to the region's columns (the other inputs fixed) and rows:
``torch.autograd.functional.jacobian`` of that gives the analytic cells through the user's
backward, ``torch.autograd.gradcheck.get_numerical_jacobian`` gradcheck's central differences.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch.autograd import Function
from torch.autograd.gradcheck import get_numerical_jacobian

from gradviz.core.inputs import prepare_inputs
from gradviz.core.region import region_of_function
from gradviz.schema.errors import SettingsError, SizeLimitError
from gradviz.schema.results import MAX_REGION_SIDE, region_around
from gradviz.schema.settings import CheckSettings
from tests.core.test_large import ScaledBySum, run, sin_with_wrong
from tests.real_world import oracle

CPU = torch.device("cpu")
EPS, ATOL, RTOL = CheckSettings().eps, CheckSettings().atol, CheckSettings().rtol


def region(fn, x, rows: range, cols: range, **settings):
    prepared = prepare_inputs((x,), CPU, torch.float64, ["x"])
    return region_of_function(fn, prepared, CheckSettings(**settings), (0, 0), rows, cols)


def torch_region(fn, x: torch.Tensor, rows: range, cols: range) -> tuple[np.ndarray, np.ndarray]:
    """Analytic and numerical cells of ``fn`` at ``x`` for these rows and columns, by PyTorch alone."""
    fixed = x.detach().clone()

    def restricted(xs: torch.Tensor) -> torch.Tensor:
        full = torch.cat([fixed[: cols.start], xs, fixed[cols.stop :]])
        return fn.apply(full)[rows.start : rows.stop]

    xs = fixed[cols.start : cols.stop].clone().requires_grad_()
    analytic = torch.autograd.functional.jacobian(restricted, xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # get_numerical_jacobian is deprecated, not gone
        (numerical,) = get_numerical_jacobian(lambda inputs: restricted(inputs[0]), (xs,), eps=EPS)
    # gradcheck's numerical Jacobian is (input, output); gradviz's rows are outputs
    return analytic.numpy(), numerical.T.contiguous().numpy()


def test_the_region_around_the_cell_the_search_found_is_exactly_torchs():
    fn = sin_with_wrong((77_777,))
    x = torch.randn(100_000, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).requires_grad_()
    (large,) = run(fn, x.detach().clone().requires_grad_()).large_blocks
    cell = large.cells[0]
    rows, cols = region_around(cell.row, cell.col, large.shape)
    got = region(fn, x, rows, cols)
    analytic, numerical = torch_region(fn, x, rows, cols)
    np.testing.assert_array_equal(got.comparison.analytic, analytic)
    np.testing.assert_array_equal(got.comparison.numerical, numerical)
    failing = ~np.isclose(analytic, numerical, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got.comparison.failing, failing)
    assert got.contains(cell.row, cell.col) and got.worst == (cell.row, cell.col)
    assert got.comparison.n_failing == 1 == int(failing.sum())
    local = (cell.row - got.row0, cell.col - got.col0)
    # the same cell the search computed, from the same calls
    assert got.comparison.analytic[local] == cell.analytic and got.comparison.numerical[local] == cell.numerical


def test_a_dense_block_region_matches_torchs_whole_jacobian():
    x = torch.rand(120, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).add(0.5).requires_grad_()
    whole_a = oracle.analytical_jacobian(ScaledBySum, (x,))[0, 0]
    whole_n = oracle.numerical_jacobian(ScaledBySum, (x,))[0, 0]
    rows, cols = range(30, 50), range(10, 25)
    got = region(ScaledBySum, x.detach().clone().requires_grad_(), rows, cols, max_jacobian_bytes=1)
    np.testing.assert_allclose(got.comparison.analytic, whole_a[30:50, 10:25], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.comparison.numerical, whole_n[30:50, 10:25], rtol=0, atol=1e-9)
    failing = {(got.row0 + int(r), got.col0 + int(c)) for r, c in zip(*np.nonzero(got.comparison.failing))}
    assert failing == {(40, 17)}  # the planted slip inside it; (3, 3) lies outside


def test_a_region_over_the_limit_or_outside_the_block_is_refused_clearly():
    fn = sin_with_wrong(())
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(3)).requires_grad_()
    side = MAX_REGION_SIDE + 1
    with pytest.raises(SizeLimitError, match=f"at most {MAX_REGION_SIDE} rows and {MAX_REGION_SIDE} columns"):
        region(fn, x, range(0, side), range(0, 10))
    with pytest.raises(SettingsError, match=r"Columns 995\.\.1004 are not inside block out0 / x \(1,000 × 1,000\)"):
        region(fn, x, range(0, 10), range(995, 1005))
    with pytest.raises(SettingsError, match="not inside"):
        region(fn, x, range(-1, 5), range(0, 10))


class ViewWithWrongGrad(Function):
    """Identity that returns a view of its input; backward scales grad_output in place at one
    element and returns that very tensor (so row K is 1.5 where it should be 1)."""

    K = 54_321

    @staticmethod
    def forward(ctx, x):
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        g.view(-1)[ViewWithWrongGrad.K] *= 1.5
        return g


def test_an_aliasing_function_is_still_computed_right():
    k = ViewWithWrongGrad.K
    x = torch.randn(100_000, dtype=torch.float64, generator=torch.Generator().manual_seed(4)).requires_grad_()
    rows, cols = region_around(k, k, (100_000, 100_000), 40)
    got = region(ViewWithWrongGrad, x, rows, cols)
    analytic, numerical = torch_region(ViewWithWrongGrad, x, rows, cols)
    np.testing.assert_array_equal(got.comparison.analytic, analytic)
    np.testing.assert_array_equal(got.comparison.numerical, numerical)
    assert analytic[k - rows.start, k - cols.start] == 1.5 and np.count_nonzero(analytic) == 40
    assert got.worst == (k, k) and got.comparison.n_failing == 1
    assert torch.equal(x, x.detach().clone())  # and the input is back as it was


def test_region_around_stays_inside_the_block():
    assert region_around(5, 99, (100, 100), 32) == (range(0, 32), range(68, 100))
    assert region_around(50, 50, (10, 100), 32) == (range(0, 10), range(34, 66))
