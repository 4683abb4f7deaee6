"""The reproducer ``pytest --gradviz-artifacts`` writes holds no absolute path
of the machine that wrote it and runs from any folder, also after the project and its artifacts are
copied elsewhere (a CI artifact downloaded by a colleague).

A real pytest run (a subprocess) on a src-layout project writes the scripts; the project is then
copied to another place, the original deleted, and each script run from a third folder with only
torch on the path. Its verdict must be gradcheck's on the copied module's Function.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gradviz import pytest_plugin
from gradviz.api.reproducer import relative_parts
from tests.api.test_pytest_plugin import plugin_option
from tests.paths import ROOT
from tests.real_world.oracle import gradcheck_passes

HELPERS = '''
def half(t):
    return 0.5 * t
'''

OPS = '''
import torch

from mypkg.helpers import half


class Halved(torch.autograd.Function):
    """x * y whose backward is half the truth."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return half(grad * y), half(grad * x)


def args():
    x = torch.linspace(1.0, 2.0, 3, dtype=torch.float64).requires_grad_()
    y = torch.linspace(-1.0, 1.0, 3, dtype=torch.float64).requires_grad_()
    return x, y
'''

TESTS = '''
import torch

from gradviz.testing import assert_gradients
from mypkg.helpers import half
from mypkg.ops import Halved, args


class HalfSquare(torch.autograd.Function):
    """Defined here: written into the script as source, with its import of mypkg.helpers."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return half(2 * x * grad)


def test_imported():
    assert_gradients(Halved, args())


def test_written_out():
    assert_gradients(HalfSquare, args()[0])
'''


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """The project after its pytest run, copied to another place; the original is gone."""
    base = tmp_path_factory.mktemp("portable")
    project = base / "made_here" / "project"
    (project / "src" / "mypkg").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "mypkg" / "__init__.py").write_text("")
    (project / "src" / "mypkg" / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (project / "src" / "mypkg" / "ops.py").write_text(textwrap.dedent(OPS))
    (project / "tests" / "test_ops.py").write_text(textwrap.dedent(TESTS))
    (project / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugin_option(), "--gradviz-artifacts", "artifacts"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1 and "2 failed" in out.stdout, out.stdout + out.stderr
    copy = base / "elsewhere" / "copy"
    shutil.copytree(project, copy)
    shutil.rmtree(base / "made_here")
    third = base / "third"
    third.mkdir()
    return project, copy, third


def script_of(project: Path, test: str) -> Path:
    return pytest_plugin.artifact_folder(project / "artifacts", f"tests/test_ops.py::{test}") / "reproducer.py"


def copied_verdict(src: Path) -> bool:
    """torch.autograd.gradcheck's verdict on the copied mypkg.ops.Halved."""
    sys.path.insert(0, str(src))
    try:
        from mypkg.ops import Halved, args

        return gradcheck_passes(Halved.apply, args(), quiet=True)
    finally:
        sys.path.remove(str(src))
        for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
            del sys.modules[name]


@pytest.mark.parametrize("test", ["test_imported", "test_written_out"])
def test_the_moved_reproducer_runs_from_a_third_folder(moved, test):
    made_at, copy, third = moved
    script = script_of(copy, test)
    text = script.read_text()
    assert str(made_at) not in text and str(made_at.parent.parent) not in text
    assert "sys.path.insert(0, '" not in text  # no folder of the machine that wrote it
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # torch only, as a bug report's reader
    run = subprocess.run(
        [sys.executable, str(script)], cwd=third, env=env, capture_output=True, text=True, timeout=300
    )
    expected = copied_verdict(copy / "src") if test == "test_imported" else False
    assert run.returncode == (0 if expected else 1), run.stdout + run.stderr
    assert "Jacobian mismatch" in run.stdout, run.stdout + run.stderr  # the Function ran: not an ImportError


def test_the_script_finds_the_project_from_the_current_folder_too(moved):
    """Only the script is taken elsewhere: run from the project's folder, it finds mypkg there."""
    _, copy, third = moved
    lone = third / "lone"
    lone.mkdir()
    shutil.copy(script_of(copy, "test_imported"), lone / "reproducer.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, str(lone / "reproducer.py")], cwd=copy / "src", env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1 and "Jacobian mismatch" in run.stdout, run.stdout + run.stderr


def test_relative_parts_never_spell_out_the_machines_layout(tmp_path):
    assert relative_parts(str(tmp_path / "p" / "src"), tmp_path / "p" / "artifacts" / "t") == ("..", "..", "src")
    assert relative_parts(str(tmp_path), tmp_path) == ()
    assert relative_parts("/home/someone/project", Path("/var/artifacts/t")) == ()  # only "/" in common
