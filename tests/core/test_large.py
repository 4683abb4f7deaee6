"""Jacobians too large to hold: gradcheck's fast verdict, then the wrong cells found by bisection.

The failing cells the search reports are held to PyTorch: on a block small enough to compute
whole, they are exactly the cells where torch's Jacobian and central differences disagree.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.autograd import Function

from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.schema.report import verdict_line
from gradviz.schema.settings import CheckSettings
from tests.core.functions import InPlaceDouble
from tests.real_world import oracle

CPU = torch.device("cpu")


def sin_with_wrong(indices: tuple[int, ...], factor: float = 1.01):
    class SinWrongAt(Function):
        """sin, whose backward is off by ``factor`` at a few elements."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = x.cos()
            for k in indices:
                d.view(-1)[k] *= factor
            return g * d

    return SinWrongAt


def run(fn, x, **settings):
    prepared = prepare_inputs((x,), CPU, torch.float64, ["x"])
    return check_function(fn, prepared, CheckSettings(**settings))


def test_one_wrong_derivative_among_a_hundred_thousand_inputs_is_found():
    fn = sin_with_wrong((77_777,))
    x = torch.randn(100_000, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).requires_grad_()
    result = run(fn, x)
    assert not result.blocks and len(result.large_blocks) == 1  # never held: 10^10 cells
    (block,) = result.large_blocks
    assert [(c.row, c.col) for c in block.cells] == [(77_777, 77_777)]
    cell = block.cells[0]
    cos = torch.cos(x.detach()[77_777])
    assert cell.analytic == float(cos * 1.01) and abs(cell.numerical - float(cos)) < 1e-8
    assert not result.passed and block.complete and block.probes < 200
    assert result.cell_label(block, 77_777, 77_777) == "out0[77777] / x[77777]"
    # PyTorch's own fast mode misses a 1 % error in one cell of 10^10; the search does not
    assert result.checks[0].name == "fast_projection"
    error = abs(cell.analytic - cell.numerical)
    assert verdict_line(result) == (
        f"FAILED: 1 wrong cell found; worst out0[77777] / x[77777] (|err| {error:.2g})"
    )


def test_a_correct_large_function_passes_in_a_few_calls():
    x = torch.randn(100_000, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).requires_grad_()
    result = run(sin_with_wrong(()), x)
    assert result.passed and result.large_blocks[0].probes <= 3
    assert result.checks[0].passed
    assert verdict_line(result).startswith("PASSED: SinWrongAt, no wrong cell found among 10,000,000,000")


class ScaledBySum(Function):
    """A dense Jacobian: y = x * sum(x), with two planted slips in the backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * x.sum() + (g * x).sum()
        grad[17] += 0.5 * g[40]  # cell (40, 17) wrong
        grad[3] -= 0.2 * g[3]  # cell (3, 3) wrong
        return grad


def test_the_cells_found_are_exactly_the_cells_torch_says_fail():
    x = torch.rand(120, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).add(0.5).requires_grad_()
    result = run(ScaledBySum, x.detach().clone().requires_grad_(), max_jacobian_bytes=1)  # forced to search
    found = {(c.row, c.col) for c in result.large_blocks[0].cells}
    analytic = oracle.analytical_jacobian(ScaledBySum, (x,))[0, 0]
    numerical = oracle.numerical_jacobian(ScaledBySum, (x,))[0, 0]
    failing = ~np.isclose(analytic, numerical, rtol=1e-3, atol=1e-5)
    assert found == {(int(r), int(c)) for r, c in zip(*np.nonzero(failing))} == {(40, 17), (3, 3)}
    assert not result.passed


def test_an_in_place_forward_is_searched_on_copies_of_its_input():
    """Without copies every probe's forward would double x again and the search would report
    'wrong' cells of a right backward; gradcheck's verdict on fn(x.clone()) passes."""
    x = torch.randn(3000, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) + 0
    assert torch.autograd.gradcheck(lambda t: InPlaceDouble.apply(t.clone()), (x.clone().requires_grad_(),))
    result = run(InPlaceDouble, x.requires_grad_(), max_jacobian_bytes=1_000_000)
    assert result.large_blocks, "the large path was not taken"
    assert result.passed, [b.cells for b in result.large_blocks]
