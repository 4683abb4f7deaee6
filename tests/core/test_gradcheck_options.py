"""gradcheck's opt-in options: fast_mode, check_batched_grad, masked, check_backward_ad.

The oracle is ``torch.autograd.gradcheck`` with the same options on the same input: gradviz's
verdict must equal it, through the API and (one case per option) the CLI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.cli.contract import ExitCode
from gradviz.schema.errors import GradvizError, SettingsError
from gradviz.schema.report import verdict_line
from gradviz.testing import assert_gradients
from tests.core import option_functions as fns
from tests.real_world.oracle import gradcheck_passes

SOURCE = Path(fns.__file__)
OPTIONS = [
    {"fast_mode": True},
    {"fast_mode": True, "check_undefined_grad": False},
    {"check_undefined_grad": False},
    {"check_batched_grad": True},
    {"masked": True},
    {"masked": False},
]


def inputs(contiguous: bool) -> torch.Tensor:
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    return x if contiguous else x.detach().t().requires_grad_()  # a transposed, non-contiguous input


def gradcheck_verdict(fn, x: torch.Tensor, **options) -> bool:
    torch.manual_seed(0)  # fast mode's u, v and batched grad's grad_outputs come from the global generator
    return gradcheck_passes(fn.apply, (x,), **options)


def gradviz_report(fn, x: torch.Tensor, **options) -> gradviz.Report:
    torch.manual_seed(0)
    return gradviz.check(fn, x, raise_exception=False, **options)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("fn", fns.FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "transposed"])
def test_verdict_equals_gradchecks_with_the_same_options(fn, options, contiguous):
    x = inputs(contiguous)
    assert gradviz_report(fn, x, **options).passed == gradcheck_verdict(fn, x, **options)


def test_the_functions_tell_the_options_apart():
    """Each option changes gradcheck's verdict on at least one Function here, so the test above
    would catch an option gradviz ignored."""
    x = inputs(True)
    plain = {fn: gradcheck_verdict(fn, x) for fn in fns.FUNCTIONS}
    for option in ({"fast_mode": True}, {"check_batched_grad": True}, {"check_undefined_grad": False}):
        assert any(gradcheck_verdict(fn, x, **option) != plain[fn] for fn in fns.FUNCTIONS), option


def test_fast_mode_shows_the_cells_and_says_which_verdict_it_gives():
    x = inputs(True)
    report = gradviz_report(fns.OneCellOff, x, fast_mode=True)
    assert report.passed == gradcheck_verdict(fns.OneCellOff, x, fast_mode=True)
    fast = next(c for c in report.result.checks if c.name == "fast_mode")
    assert fast.passed == report.passed
    slow_fails = not gradcheck_verdict(fns.OneCellOff, x)
    # the verdict first: the wrong cell found by the screen and bisection, no map built yet
    assert report.result.deferred_maps and not report.result.blocks
    assert sum(len(b.cells) for b in report.result.large_blocks) == int(slow_fails)
    if report.passed and slow_fails:
        assert any("fast_mode=True" in w and "element-wise" in w for w in report.result.warnings)
        line = verdict_line(report.result)
        assert "fast_mode" in line and "1 wrong cell found" in line and "no wrong cell" not in line
    # the maps when read: the cell still shows
    assert sum(b.n_failing for b in report.blocks) == int(slow_fails)
    assert not report.result.deferred_maps and report.result.n_failing == int(slow_fails)
    if report.passed and report.result.n_failing:
        assert any("fast_mode=True" in w and "element-wise" in w for w in report.result.warnings)
        line = verdict_line(report.result)  # the banner's headline never says every cell is within tolerance
        assert "fast_mode" in line and f"{report.result.n_failing:,} of" in line and "all " not in line


def test_batched_grad_is_a_named_check_from_pytorchs_own_test():
    x = inputs(True)
    report = gradviz_report(fns.NumpyBackward, x, check_batched_grad=True)
    batched = next(c for c in report.result.checks if c.name == "batched_grad")
    assert batched.failed == (not gradcheck_verdict(fns.NumpyBackward, x, check_batched_grad=True))
    assert batched.failed and "batched" in batched.detail
    assert "batched_grad" not in [c.name for c in gradviz_report(fns.NumpyBackward, x).result.checks]


def test_assert_gradients_takes_the_same_options():
    x = inputs(True)
    assert_gradients(fns.Square, x, fast_mode=True, check_batched_grad=True, masked=True)
    with pytest.raises(gradviz.GradientMismatch):
        assert_gradients(fns.NumpyBackward, x, check_batched_grad=True)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"check_backward_ad": False}, "check_backward_ad"),
        ({"check_batched_forward_grad": True}, "requires check_forward_ad"),
        ({"check_batched_grad": True, "check_backward_ad": False}, "check_backward_ad"),
    ],
)
def test_what_gradcheck_refuses_is_refused_with_its_reason(options, said):
    x = inputs(True)
    with pytest.raises(AssertionError):  # gradcheck gives no verdict either: it refuses the options
        torch.autograd.gradcheck(fns.Square.apply, (x,), raise_exception=False, **options)
    with pytest.raises(SettingsError, match=said):
        gradviz.check(fns.Square, x, raise_exception=False, **options)


def test_masked_sparse_input_is_refused_clearly():
    x = torch.eye(3, dtype=torch.float64).to_sparse().requires_grad_()
    with pytest.raises(GradvizError, match=r"sparse_coo.*dense inputs only"):
        gradviz.check(lambda a: a.to_dense() * 2, x, masked=True)


def _cli_source_module():
    spec = importlib.util.spec_from_file_location("option_functions_cli", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("flag", "name", "options"),
    [
        ("--fast-mode", "InPlaceGradOutput", {"fast_mode": True}),
        ("--batched-grad", "NumpyBackward", {"check_batched_grad": True}),
        ("--masked", "WrongFactor", {"masked": True}),
    ],
)
def test_cli_flag_gives_gradchecks_verdict(cli, flag, name, options):
    module = _cli_source_module()
    fn = getattr(module, name)
    (x,) = module.example_inputs(torch.device("cpu"), torch.float64)
    expected = ExitCode.PASS if gradcheck_verdict(fn, x, **options) else ExitCode.MISMATCH
    out = cli("check", str(SOURCE), "--function", name, flag, "--json")
    assert out.returncode == expected, out.stderr


def test_cli_no_backward_ad_is_refused_as_gradcheck_refuses_it(cli):
    out = cli("check", str(SOURCE), "--function", "Square", "--no-backward-ad")
    assert out.returncode == ExitCode.ERROR
    assert "check_backward_ad" in out.stdout + out.stderr


@pytest.mark.parametrize("fn", fns.FUNCTIONS, ids=lambda f: f.__name__)
def test_jacobians_too_large_to_hold_keep_gradchecks_verdict(fn):
    """Past the memory limit gradviz searches cells by projections; the options still decide."""
    x = inputs(True)
    options = {"fast_mode": True, "check_batched_grad": True}
    torch.manual_seed(0)
    report = gradviz.check(fn, x, raise_exception=False, max_memory_mb=0.001, **options)
    assert report.result.analytic_path == "projections"
    assert report.passed == gradcheck_verdict(fn, x, **options)


def test_cli_fast_mode_gives_the_verdict_first_and_saves_the_maps_of_a_failing_check_only(cli, tmp_path):
    """Through the real worker: ``--fast-mode`` builds no Jacobian for a passing check, and
    ``--save`` writes the maps of a failing one, equal bitwise to the API's lazily built ones."""
    import json

    import numpy as np

    module = _cli_source_module()
    (x,) = module.example_inputs(torch.device("cpu"), torch.float64)
    out = cli("check", str(SOURCE), "--function", "Square", "--fast-mode", "--json")
    assert out.returncode == ExitCode.PASS, out.stderr
    document = json.loads(out.stdout)
    assert document["deferred_maps"] is True and document["blocks"] == []
    assert document["paths"] == {"analytic": "projections", "numerical": "projections"}

    passing = tmp_path / "passing"
    out = cli("check", str(SOURCE), "--function", "Square", "--fast-mode", "--save", str(passing))
    assert out.returncode == ExitCode.PASS, out.stderr
    assert not passing.exists() or not list(passing.glob("*.npy"))

    failing = tmp_path / "failing"
    out = cli("check", str(SOURCE), "--function", "WrongFactor", "--fast-mode", "--save", str(failing))
    assert out.returncode == ExitCode.MISMATCH, out.stderr
    lazy = gradviz.check(module.WrongFactor, x, fast_mode=True, raise_exception=False).blocks[0]
    assert np.load(failing / "analytic_o0_i0.npy").tobytes() == lazy.analytic.tobytes()
    assert np.load(failing / "numerical_o0_i0.npy").tobytes() == lazy.numerical.tobytes()
