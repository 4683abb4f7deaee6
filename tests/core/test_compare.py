"""The tolerance rule, cell mapping and size guard, each checked against PyTorch itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradviz.core.check import check_function
from gradviz.core.compare import compare_block
from gradviz.core.inputs import prepare_inputs
from gradviz.schema.settings import CheckSettings, Tolerance
from tests.core.functions import SinCos, inputs_for

CPU = torch.device("cpu")


def test_failing_mask_is_torch_isclose_rule():
    rng = np.random.default_rng(0)
    n = rng.normal(size=(40, 30))
    a = n + rng.normal(scale=1e-3, size=n.shape)
    tol = Tolerance(atol=1e-4, rtol=1e-3)
    block = compare_block(0, 0, (40,), (30,), a, n, tol)
    expected = ~torch.isclose(torch.from_numpy(a), torch.from_numpy(n), rtol=tol.rtol, atol=tol.atol).numpy()
    np.testing.assert_array_equal(block.failing, expected)
    assert block.n_failing == expected.sum() > 0
    assert block.max_abs_error == np.abs(a - n).max()
    assert block.analytic[block.worst] - block.numerical[block.worst] in (
        block.max_abs_error,
        -block.max_abs_error,
    )


def test_non_finite_cells_follow_torch_isclose():
    """NaN fails, even against NaN; equal infinities pass (as in gradcheck's allclose); a lone one fails."""
    a = np.array([[1.0, np.inf, np.nan], [np.nan, 2.0, -np.inf]])
    n = np.array([[1.0, np.inf, np.nan], [0.0, 2.0, np.inf]])
    tol = Tolerance()
    block = compare_block(0, 0, (2,), (3,), a, n, tol)
    expected = ~torch.isclose(torch.from_numpy(a), torch.from_numpy(n), rtol=tol.rtol, atol=tol.atol).numpy()
    np.testing.assert_array_equal(block.failing, expected)
    assert block.failing.sum() == 3 and not block.failing[0, 1]
    assert block.n_nonfinite == 4 and block.max_abs_error == np.inf
    assert block.error[0, 1] == 0 and block.error[0, 2] == np.inf


def test_cell_index_maps_to_torch_jacobian_layout():
    x = torch.rand(2, 3, dtype=torch.float64)
    w = torch.rand(4, 3, dtype=torch.float64)

    def f(x, w):
        return (x @ w.T).sin()  # out[2, 4]

    full = torch.autograd.functional.jacobian(f, (x, w))[1]  # shape out + in = (2, 4, 4, 3)
    flat = full.reshape(8, 12).numpy()
    block = compare_block(0, 1, (2, 4), (4, 3), flat, flat, Tolerance())
    for row in range(8):
        for col in range(12):
            out_idx, in_idx = block.cell_index(row, col)
            assert full[out_idx + in_idx] == flat[row, col]


def test_scalar_shapes_map_to_empty_index():
    block = compare_block(0, 0, (), (3,), np.zeros((1, 3)), np.zeros((1, 3)), Tolerance())
    assert block.cell_index(0, 2) == ((), (2,))


def test_cell_label_uses_argument_names():
    args = inputs_for(SinCos)
    result = check_function(SinCos, prepare_inputs(args, CPU, torch.float64, ["x", "scale", "y"]))
    block = result.block(1, 2)
    assert result.cell_label(block, 3, 4) == "out1[3] / y[4]"


def test_jacobians_past_the_limit_are_searched_not_allocated():
    args = (torch.rand(300, 300, dtype=torch.float64, requires_grad=True),)
    prepared = prepare_inputs(args, CPU, torch.float64, ["big"])

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    result = check_function(Double, prepared, CheckSettings(max_jacobian_bytes=100 * 2**20))
    message = result.warnings[0]
    assert "90,000 output elements × 90,000 input elements" in message
    assert "GiB" in message and "more than the limit of 100.0 MiB" in message  # 21 bytes a cell held
    assert not result.blocks and result.large_blocks and result.passed


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("atol", "rtol"), [(1e-5, 1e-3), (0.0, 0.0), (1e-2, 0.0)])
def test_mask_equals_isclose_on_a_mix_of_special_values(dtype, atol, rtol):
    rng = np.random.default_rng(1)
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.0 + 1e-4, 1e308, -1e308])
    a = np.where(rng.random((50, 40)) < 0.5, rng.choice(pool, (50, 40)), rng.normal(size=(50, 40)))
    n = np.where(rng.random((50, 40)) < 0.5, rng.choice(pool, (50, 40)), a + rng.normal(scale=1e-3, size=(50, 40)))
    block = compare_block(0, 0, (50,), (40,), a, n, Tolerance(atol=atol, rtol=rtol), compute_dtype=dtype)
    ta, tn = torch.from_numpy(a).to(dtype), torch.from_numpy(n).to(dtype)
    np.testing.assert_array_equal(block.failing, ~torch.isclose(ta, tn, rtol=rtol, atol=atol).numpy())


@pytest.mark.parametrize("chunk_cells", [7, 40, 10**6])
def test_worst_cell_is_the_first_largest_error_across_row_chunks(monkeypatch, chunk_cells):
    """The maximum is found per chunk and the cell located in one chunk only: the result must be
    the row-major first cell holding the largest error, as one argmax over the whole block."""
    from gradviz.core import compare

    monkeypatch.setattr(compare, "ROW_CHUNK_CELLS", chunk_cells)
    rng = np.random.default_rng(2)
    n = rng.normal(size=(30, 8))
    a = n + rng.normal(scale=1e-6, size=n.shape)
    a[[4, 17, 29], [3, 1, 7]] = n[[4, 17, 29], [3, 1, 7]] + 5.0  # a tie, in different chunks
    block = compare_block(0, 0, (30,), (8,), a, n, Tolerance())
    error = torch.abs(torch.from_numpy(a) - torch.from_numpy(n))
    assert block.worst == np.unravel_index(int(torch.argmax(error)), a.shape) == (4, 3)
    assert block.max_abs_error == float(error.max())
    a[29, 0] = n[29, 0] + 9.0  # now in the last chunk, the one still held after the pass
    block = compare_block(0, 0, (30,), (8,), a, n, Tolerance())
    assert block.worst == (29, 0) and block.max_abs_error == float(np.abs(a - n).max())
    a[22, 5] = np.nan  # any NaN is the worst kind of failure, wherever it is
    block = compare_block(0, 0, (30,), (8,), a, n, Tolerance())
    assert block.worst == (22, 5) and block.max_abs_error == np.inf and block.n_nonfinite == 1


def test_all_zero_matches_numpy_any_wherever_the_nonzero_is():
    """``all_zero`` stops at the first chunk of rows with a nonzero; a lone nonzero in the last
    cell, or in a transposed (non-contiguous) block, must still count."""
    zeros = np.zeros((300, 500))
    assert compare_block(0, 0, (300,), (500,), zeros, zeros.copy(), Tolerance()).all_zero
    for where in [(0, 0), (299, 499), (150, 3)]:
        a = zeros.copy()
        a[where] = 1e-300
        for analytic, numerical in [(a, zeros), (zeros, a), (a.T, zeros.T)]:
            block = compare_block(0, 0, analytic.shape[:1], analytic.shape[1:], analytic, numerical, Tolerance())
            assert not block.all_zero


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rtol", [0.0, 1e-3])
def test_errors_at_the_edge_of_atol_count_as_isclose_counts_them(dtype, rtol):
    """A block whose largest error is within atol is passed without its threshold pass; at the
    very edge (atol itself, one step either side of it in the compared dtype) the count must
    still be torch.isclose's, in every dtype a check compares in."""
    atol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    edge = torch.tensor(atol, dtype=dtype)
    steps = [torch.nextafter(edge, torch.tensor(-1.0, dtype=dtype)), edge] if dtype.is_floating_point else []
    if dtype in (torch.float64, torch.float32):
        steps.append(torch.nextafter(edge, torch.tensor(1.0, dtype=dtype)))
    for delta in steps:
        for base in (0.0, 0.5):
            n = torch.full((6, 5), base, dtype=dtype)
            a = n + delta
            block = compare_block(
                0, 0, (6,), (5,), a.double().numpy(), n.double().numpy(), Tolerance(atol=atol, rtol=rtol),
                compute_dtype=dtype,
            )  # fmt: skip
            expected = int((~torch.isclose(a, n, rtol=rtol, atol=atol)).sum())
            assert block.n_failing == expected, (dtype, float(delta), base)
            assert int(block.failing.sum()) == expected
