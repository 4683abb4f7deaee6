"""fast_mode's verdict first: gradcheck's fast comparison at its cost, maps only when read.

The oracle is PyTorch: gradcheck(fast_mode=True) with the same seed for the verdict, and each
cell gradviz reports recomputed by torch (one analytic row, one central-difference column).
"""

from __future__ import annotations

import tracemalloc

import pytest
import torch
from torch.autograd import Function

import gradviz
from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.core.loader import argument_names
from gradviz.core.verdict_first import CELLS_FOUND
from gradviz.schema.errors import SettingsError
from gradviz.schema.report import verdict_line
from gradviz.schema.settings import CheckSettings
from tests.core import option_functions as fns
from tests.core.functions import InPlaceDouble

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.t(), a.t() @ g


class MatMulColumnsOff(MatMul):
    """The second input's gradient 20 % off in its first column: a localized bug that gradcheck's
    fast mode passes at some inputs (at 16 x 16 as a x3 error in 8 of 64 columns does at 64 x 64)
    and its slow mode always fails."""

    @staticmethod
    def backward(ctx, g):
        ga, gb = MatMul.backward(ctx, g)
        gb = gb.clone()
        gb[:, :1] *= 1.2
        return ga, gb


class TwoCellsOff(Function):
    """sin with two cells off by the same amount: random signs alone cancel them half the time."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * x.cos()
        grad[3] += 0.05 * g[3]
        grad[11] += 0.05 * g[11]
        return grad


class SinCos(Function):
    """Two outputs, the second's backward off by a factor."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x.sin() * y, x.cos()

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        return g1 * x.cos() * y - 1.5 * g2 * x.sin(), g1 * x.sin()


def matrices(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(n, n, generator=g, dtype=torch.float64).requires_grad_() for _ in range(2))


def truly_fails(fn, args: tuple, output: int, input: int, row: int, col: int) -> bool:
    """The cell by torch: its analytic value from one backward, its numerical one from one
    central-difference column, judged by gradcheck's rule."""
    out = fn.apply(*args)
    out = out if isinstance(out, tuple) else (out,)
    v = torch.zeros_like(out[output]).reshape(-1)
    v[row] = 1
    (grad,) = torch.autograd.grad(out[output], args[input], v.view_as(out[output]), allow_unused=True)
    analytic = 0.0 if grad is None else float(grad.reshape(-1)[col])
    with torch.no_grad():
        x = args[input]
        keep = x.clone()
        x.view(-1)[col] += EPS
        plus = fn.apply(*args)
        x.copy_(keep)
        x.view(-1)[col] -= EPS
        minus = fn.apply(*args)
        x.copy_(keep)
    plus, minus = (p if isinstance(p, tuple) else (p,) for p in (plus, minus))
    numerical = float((plus[output].reshape(-1)[row] - minus[output].reshape(-1)[row]) / (2 * EPS))
    return abs(analytic - numerical) > ATOL + RTOL * abs(numerical)


def gradcheck_fast(fn, args: tuple, seed: int) -> bool:
    torch.manual_seed(seed)  # fast mode's u, v come from the global generator
    return torch.autograd.gradcheck(fn.apply, args, fast_mode=True, raise_exception=False)


def test_a_localized_bug_gets_gradchecks_verdict_and_the_cells_it_misses():
    """Where gradcheck's fast mode passes the bug, gradviz passes it too (the verdict is
    gradcheck's) and warns with cells that truly fail; where it fails, gradviz's worst cell truly
    fails. No map is built in either case."""
    verdicts = []
    for seed in range(8):
        args = matrices(16, seed)
        expected = gradcheck_fast(MatMulColumnsOff, args, 0)
        verdicts.append(expected)
        torch.manual_seed(0)
        report = gradviz.check(MatMulColumnsOff, args, fast_mode=True, raise_exception=False)
        assert report.passed == expected, seed
        result = report.result
        assert result.deferred_maps and not result.blocks
        cells = [(b, c) for b in result.large_blocks for c in b.cells]
        assert cells, f"seed {seed}: the cells gradcheck's projections can miss were not found"
        for block, cell in cells:
            assert (block.output, block.input) == (0, 1)
            assert truly_fails(MatMulColumnsOff, args, 0, 1, cell.row, cell.col)
        if expected:
            assert CELLS_FOUND.format(count=len(cells)) in result.warnings
            assert verdict_line(result).startswith("PASSED: MatMulColumnsOff by gradcheck's fast_mode")
        else:
            assert verdict_line(result).startswith("FAILED: fast_mode; ")
        assert not torch.autograd.gradcheck(MatMulColumnsOff.apply, args, raise_exception=False)  # slow mode
    assert any(verdicts) and not all(verdicts), f"the case no longer tells fast mode apart: {verdicts}"


@pytest.mark.parametrize("seed", range(10))
def test_two_cells_of_equal_error_are_never_cancelled_by_the_screen(seed):
    x = torch.randn(16, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).requires_grad_()
    report = gradviz.check(TwoCellsOff, x, fast_mode=True, raise_exception=False)
    found = {(c.row, c.col) for b in report.result.large_blocks for c in b.cells}
    assert found == {(3, 3), (11, 11)}
    assert all(truly_fails(TwoCellsOff, (x,), 0, 0, r, c) for r, c in found)


def test_a_passing_fast_check_builds_nothing_of_the_jacobians_size():
    args = matrices(64)
    gradviz.check(MatMul, args, fast_mode=True)  # warm
    tracemalloc.start()
    try:
        report = gradviz.check(MatMul, args, fast_mode=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    jacobian_bytes = 64 * 64 * 64 * 64 * 8
    assert peak < jacobian_bytes / 100, peak  # NumPy's arrays are traced: a map would show
    assert report.passed and report.result.deferred_maps
    assert all(b.probes == 0 for b in report.result.large_blocks)  # the screen agreed: no search
    assert verdict_line(report.result) == (
        "PASSED: MatMul by gradcheck's fast_mode (random projections agree); no wrong cell found among "
        f"{2 * 64**4:,} (one more random projection)"
    )


CASES = [
    (fns.OneCellOff, lambda: fns.example_inputs(torch.device("cpu"), torch.float64)),
    (fns.WrongFactor, lambda: fns.example_inputs(torch.device("cpu"), torch.float64)),
    (fns.Square, lambda: fns.example_inputs(torch.device("cpu"), torch.float64)),
    (MatMulColumnsOff, lambda: matrices(12, seed=3)),
    (
        SinCos,
        lambda: tuple(
            torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(k)).requires_grad_()
            for k in (4, 5)
        ),
    ),
]


@pytest.mark.parametrize(("fn", "make"), CASES, ids=[c[0].__name__ for c in CASES])
def test_lazy_maps_equal_the_eager_ones_bitwise(fn, make):
    args = make()
    before = [a.detach().clone() for a in args]
    names = argument_names(fn, len(args))
    eager = check_function(fn, prepare_inputs(args, None, None, names), CheckSettings(fast_mode=True), maps="eager")
    report = gradviz.check(fn, args, fast_mode=True, raise_exception=False)
    assert report.result.deferred_maps and not report.result.blocks
    lazy = report.blocks
    assert not report.result.deferred_maps and report.blocks is lazy  # built once
    assert [(b.output, b.input) for b in lazy] == [(b.output, b.input) for b in eager.blocks]
    for got, want in zip(lazy, eager.blocks):
        for name in ("analytic", "numerical", "error", "failing"):
            assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name
        assert got.hints == want.hints
    assert report.result.n_failing == eager.n_failing
    assert all(torch.equal(a.detach(), b) for a, b in zip(args, before))  # the caller's inputs, bitwise


def test_the_maps_keep_the_verdict_and_say_where_it_and_the_cells_disagree():
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    expected = gradcheck_fast(fns.OneCellOff, (x,), 0)
    torch.manual_seed(0)
    report = gradviz.check(fns.OneCellOff, x, fast_mode=True, raise_exception=False)
    checks_before = list(report.result.checks)
    assert report.passed == expected
    assert report.failing_cells and report.failing_cells[0].label == "out0[0,0] / x[0,0]"
    assert report.passed == expected and report.result.checks == checks_before  # no second verdict
    assert "maps" in report.result.seconds
    if expected:  # fast mode passes a cell that fails: said once, in the maps' words
        said = [w for w in report.result.warnings if "element-wise" in w]
        assert len(said) == 1 and "full Jacobians" in said[0]


def test_a_failing_report_raises_without_building_the_maps():
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    with pytest.raises(gradviz.GradientMismatch) as caught:
        gradviz.check(fns.WrongFactor, x, fast_mode=True)
    report = caught.value.report
    assert report.result.deferred_maps  # the message came from the cells found, not from maps
    assert "out0[" in str(caught.value)
    assert report.blocks and not report.result.deferred_maps


def test_an_unknown_maps_policy_is_refused():
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    with pytest.raises(SettingsError, match="maps must be one of eager, failing, deferred"):
        check_function(fns.Square, prepare_inputs((x,), None, None, ["x"]), CheckSettings(), maps="lazy")


def test_maps_for_a_failing_check_only_are_built_there_and_nowhere_else():
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    settings = CheckSettings(fast_mode=True)
    failing = check_function(fns.WrongFactor, prepare_inputs((x,), None, None, ["x"]), settings, maps="failing")
    passing = check_function(fns.Square, prepare_inputs((x,), None, None, ["x"]), settings, maps="failing")
    assert not failing.passed and failing.blocks and not failing.deferred_maps
    assert passing.passed and not passing.blocks and passing.deferred_maps
    assert failing.n_failing and not failing.large_blocks  # the maps' cells, not the search's


def test_a_forward_that_modifies_its_input_runs_on_copies_and_leaves_the_callers_tensor():
    """gradcheck needs such a forward called on a clone; gradviz gives that verdict on the
    caller's own tensor, which comes back bitwise unchanged."""
    x = torch.randn(40, dtype=torch.float64, generator=torch.Generator().manual_seed(6)) + 0
    before = x.clone()
    torch.manual_seed(0)
    expected = torch.autograd.gradcheck(lambda t: InPlaceDouble.apply(t.clone()), (x.clone().requires_grad_(),), fast_mode=True)
    torch.manual_seed(0)
    report = gradviz.check(InPlaceDouble, x.requires_grad_(), fast_mode=True, raise_exception=False)
    assert report.passed == expected and report.result.deferred_maps
    assert not any(b.cells for b in report.result.large_blocks)
    assert torch.equal(x.detach(), before)
    assert report.blocks[0].n_failing == 0  # the maps, on copies too
