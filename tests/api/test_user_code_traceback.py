"""When the user's forward or backward raises inside ``assert_gradients`` /
``gradviz.check``, the error is the public ``gradviz.UserCodeError`` and the traceback pytest
shows holds the user's frames only: no ``gradviz/core`` or ``gradviz/api`` frame, no torch
frame that called the user's code, none of gradviz's arguments (``settings = CheckSettings(...``).
Checked in a real pytest run (a subprocess) on a project whose Function lives in a package."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
import torch

import gradviz
import gradviz.testing
from tests.api.test_pytest_plugin import plugin_option
from tests.paths import ROOT

OPS = '''
import torch


def broken_rule(grad):
    raise ValueError("the rule for y is not written yet")


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.dim() != 1:
            raise RuntimeError("Scaled takes a vector")
        return x * 3.0

    @staticmethod
    def backward(ctx, grad):
        return broken_rule(grad)
'''

TESTS = '''
import pytest
import torch

import gradviz
from gradviz.testing import UserCodeError, assert_gradients
from mypkg.ops import Scaled


def test_backward_raises():
    assert_gradients(Scaled, torch.ones(3, dtype=torch.float64, requires_grad=True))


def test_forward_raises():
    assert_gradients(Scaled, torch.ones(2, 2, dtype=torch.float64, requires_grad=True))


def test_the_error_can_be_caught_by_its_public_name():
    with pytest.raises(gradviz.UserCodeError) as caught:
        gradviz.check(Scaled, torch.ones(3, dtype=torch.float64, requires_grad=True))
    assert caught.type is UserCodeError and isinstance(caught.value.__cause__, ValueError)
'''


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory):
    project = tmp_path_factory.mktemp("project")
    (project / "mypkg").mkdir()
    (project / "mypkg" / "__init__.py").write_text("")
    (project / "mypkg" / "ops.py").write_text(textwrap.dedent(OPS))
    (project / "test_ops.py").write_text(textwrap.dedent(TESTS))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugin_option(), "-rA", "test_ops.py"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(project)])},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return project, out


def section(out: str, test: str) -> str:
    """The failure section pytest printed for ``test``."""
    start = out.index(f"_ {test} _")
    end = out.find("\n___", start + 1)
    return out[start : end if end != -1 else out.index("short test summary")]


def assert_no_internals(text: str) -> None:
    for internal in ("gradviz/core", "gradviz/api", "gradviz/testing", "torch/autograd", "contextlib"):
        assert internal not in text, f"{internal} in:\n{text}"
    assert "settings = CheckSettings" not in text and "tracker = " not in text, text


def test_the_backward_error_shows_the_users_lines_only(pytest_run):
    _, out = pytest_run
    assert "2 failed, 1 passed" in out.stdout, out.stdout + out.stderr
    text = section(out.stdout, "test_backward_raises")
    assert 'raise ValueError("the rule for y is not written yet")' in text  # the user's raise, in context
    assert "return broken_rule(grad)" in text and "mypkg/ops.py:6: ValueError" in text
    assert "E       gradviz.UserCodeError: Scaled.backward raised ValueError: the rule for y" in text
    assert_no_internals(text)


def test_the_forward_error_shows_the_users_lines_only(pytest_run):
    _, out = pytest_run
    text = section(out.stdout, "test_forward_raises")
    assert 'raise RuntimeError("Scaled takes a vector")' in text and "mypkg/ops.py:13: RuntimeError" in text
    assert "E       gradviz.UserCodeError: Scaled.forward raised RuntimeError: Scaled takes a vector" in text
    assert_no_internals(text)


def test_user_code_error_is_public():
    from gradviz.schema.errors import UserCodeError

    assert gradviz.UserCodeError is UserCodeError is gradviz.testing.UserCodeError
    assert "UserCodeError" in gradviz.__all__ and "UserCodeError" in gradviz.testing.__all__
    assert issubclass(UserCodeError, gradviz.GradvizError)
    assert f"{UserCodeError.__module__}.{UserCodeError.__qualname__}" == "gradviz.UserCodeError"


def test_the_chained_exception_starts_at_the_users_frame(tmp_path):
    """The same outside pytest: Python's own traceback of the error shows no core frame."""
    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "raising_ops.py").write_text(textwrap.dedent(OPS))
        from raising_ops import Scaled

        with pytest.raises(gradviz.UserCodeError) as caught:
            gradviz.check(Scaled, torch.ones(3, dtype=torch.float64, requires_grad=True))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("raising_ops", None)
    text = "".join(traceback.format_exception(caught.value))
    users = [f for f in traceback.extract_tb(caught.value.__cause__.__traceback__)]
    assert [Path(f.filename).name for f in users] == ["raising_ops.py", "raising_ops.py"], text
    assert [f.name for f in users] == ["backward", "broken_rule"]
    assert "gradviz/core" not in text and "torch/autograd" not in text, text
