"""assert_gradients in a real test suite: pytest (in a subprocess) shows the failing cell and the
hint, and ``--gradviz-artifacts DIR`` leaves the report, figures and a reproducer script that,
run on its own, exits with gradcheck's verdict."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from gradviz import pytest_plugin
from tests.paths import ROOT
from tests.real_world import oracle

SUITE = '''
import torch
from gradviz.testing import assert_gradients


class Softplus(torch.autograd.Function):
    """log(1 + exp(x)), whose backward halves the sigmoid."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x) * 0.5


def batch():
    return torch.linspace(-2.0, 3.0, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()


def test_softplus_backward():
    assert_gradients(Softplus, batch())


def test_a_correct_one():
    assert_gradients(lambda x: torch.nn.functional.softplus(x), batch())


def test_softplus_fast_mode():
    assert_gradients(Softplus, batch(), fast_mode=True)
'''


def plugin_option() -> list[str]:
    """``-p gradviz.pytest_plugin`` unless the installed metadata already registers it (the entry
    point of pyproject.toml; loading it twice would be an error)."""
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "gradviz" in names else ["-p", "gradviz.pytest_plugin"]


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("suite")
    (folder / "test_ops.py").write_text(textwrap.dedent(SUITE))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        *plugin_option(),
        "--gradviz-artifacts",
        "artifacts",
    ]
    out = subprocess.run(
        [*args, "test_ops.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    return folder, out


def test_the_failure_shows_the_failing_cell_and_the_hint(suite_run):
    folder, out = suite_run
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 failed, 1 passed" in out.stdout
    module = oracle.load_module(folder / "test_ops.py")
    args = (module.batch(),)
    analytic = oracle.analytical_jacobian(module.Softplus, args)[0, 0]
    numerical = oracle.numerical_jacobian(module.Softplus, args)[0, 0]
    error = np.abs(analytic - numerical)
    row, col = np.unravel_index(np.argmax(error), error.shape)
    out_idx, in_idx = np.unravel_index(row, (2, 3)), np.unravel_index(col, (2, 3))
    label = f"out0[{out_idx[0]},{out_idx[1]}] / x[{in_idx[0]},{in_idx[1]}]"
    failing = int((error > 1e-5 + 1e-3 * np.abs(numerical)).sum())
    assert "gradviz.GradientMismatch: Softplus: the backward fails gradcheck" in out.stdout
    assert f"Mismatched elements: {failing} / 36 " in out.stdout and f"at {label} (" in out.stdout
    assert "Hint (out0 / x): Analytic ≈ 0.5 × numerical everywhere" in out.stdout
    assert "Worst 5 cells:" in out.stdout
    assert "site-packages/torch" not in out.stdout  # gradviz's and torch's frames are hidden


FAILING = pytest_plugin.artifact_folder(Path("."), "test_ops.py::test_softplus_backward").name
FAST = pytest_plugin.artifact_folder(Path("."), "test_ops.py::test_softplus_fast_mode").name


def test_artifacts_are_written_for_the_failing_test_only(suite_run):
    folder, out = suite_run
    artifacts = folder / "artifacts"
    assert FAILING.startswith("test_ops.py__test_softplus_backward-")
    assert sorted(p.name for p in artifacts.iterdir()) == sorted([FAILING, FAST])
    written = {p.name for p in (artifacts / FAILING).iterdir()}
    assert {
        "report.json",
        "report.npz",
        "message.txt",
        "reproducer.py",
        "figure_o0_i0.svg",
        "error_o0_i0.png",
    } <= written
    assert "gradviz artifacts" in out.stdout and FAILING in out.stdout


def test_a_failing_fast_mode_check_saves_the_maps_it_deferred(suite_run):
    """fast_mode builds no Jacobian for its verdict; the artifacts of its failure hold both, as
    torch computes them."""
    folder, _ = suite_run
    module = oracle.load_module(folder / "test_ops.py")
    args = (module.batch(),)
    with np.load(folder / "artifacts" / FAST / "report.npz") as saved:
        analytic = next(saved[k] for k in saved.files if k.startswith("analytic"))
        numerical = next(saved[k] for k in saved.files if k.startswith("numerical"))
    np.testing.assert_allclose(analytic, oracle.analytical_jacobian(module.Softplus, args)[0, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(numerical, oracle.numerical_jacobian(module.Softplus, args)[0, 0], rtol=0, atol=1e-8)


def test_the_reproducer_exits_with_gradchecks_verdict(suite_run):
    folder, _ = suite_run
    module = oracle.load_module(folder / "test_ops.py")
    expected = oracle.gradcheck_passes(module.Softplus.apply, (module.batch(),), quiet=True, failing_on=(Exception,))
    script = folder / "artifacts" / FAILING / "reproducer.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, str(script)], cwd="/", env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == (0 if expected else 1), run.stdout + run.stderr
    assert "Jacobian mismatch" in run.stdout


def test_the_plugin_is_registered_through_a_pytest11_entry_point():
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["pytest11"] == {"gradviz": "gradviz.pytest_plugin"}
    assert "torch" not in pytest_plugin.__dict__  # loading the plugin into every test run stays cheap


def test_a_mismatch_wrapped_in_another_exception_is_found():
    import gradviz
    from tests.api import functions as f

    try:
        try:
            gradviz.check(f.WrongSign, f.inputs())
        except AssertionError as exc:
            raise RuntimeError("a helper re-raised it") from exc
    except RuntimeError as outer:
        assert isinstance(pytest_plugin.find_mismatch(outer), gradviz.GradientMismatch)
    assert pytest_plugin.find_mismatch(ValueError("unrelated")) is None


@pytest.mark.slow
def test_an_installed_gradviz_registers_the_plugin_with_pytest(tmp_path):
    """pip-install this tree (no dependencies) and ask pytest for its options: no -p needed."""
    site = tmp_path / "site"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert build.returncode == 0, build.stderr
    assert all(
        (site / "gradviz" / package / "__init__.py").is_file()
        for package in ("api", "render", "protocol", "worker")
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "--gradviz-artifacts=DIR" in run.stdout
