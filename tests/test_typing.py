"""Type information a user's editor and type checker get: the ``py.typed`` marker ships, the lazy
exports of ``gradviz`` are the ones its ``TYPE_CHECKING`` imports name, and ``assert_gradients``
takes exactly ``gradviz.check``'s keywords. (What mypy itself then sees is checked statically by
``tests/typing_checks.py`` in ``make test``'s mypy run; the mistakes it must report are also
checked here, by running mypy on them.)"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import subprocess
import sys
import tomllib
from importlib import resources

import pytest
import torch

import gradviz
from gradviz.api.check import check
from gradviz.testing import assert_gradients
from tests.api import functions as f
from tests.paths import ROOT


def test_the_py_typed_marker_is_in_the_package_and_its_package_data():
    assert resources.files("gradviz").joinpath("py.typed").is_file()
    with open(ROOT / "pyproject.toml", "rb") as file:
        package_data = tomllib.load(file)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data.get("gradviz", [])  # what puts it into the wheel


def _type_checking_imports() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` in gradviz/__init__.py."""
    tree = ast.parse((ROOT / "gradviz" / "__init__.py").read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1
    return {
        alias.asname or alias.name: node.module
        for node in blocks[0].body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def test_every_lazy_export_is_visible_to_type_checkers_as_the_same_object():
    seen = _type_checking_imports()
    assert seen == gradviz._LAZY
    assert sorted(seen) == sorted(gradviz.__all__)
    for name, module in seen.items():
        assert getattr(gradviz, name) is getattr(importlib.import_module(module), name)
        assert name in dir(gradviz)


def test_import_gradviz_imports_no_torch():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys, gradviz; gradviz.__version__; assert 'torch' not in sys.modules, 'torch imported'"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr


def test_assert_gradients_takes_exactly_the_keywords_of_check_but_raise_exception():
    ours = inspect.signature(assert_gradients).parameters
    theirs = {k: p for k, p in inspect.signature(check).parameters.items() if k != "raise_exception"}
    assert list(ours) == list(theirs)
    for name, parameter in ours.items():
        # same kind (keyword-only after fn, inputs), same default, same annotation
        assert parameter == theirs[name], name
    assert inspect.signature(assert_gradients).return_annotation == inspect.signature(check).return_annotation


def test_assert_gradients_passes_every_keyword_on_to_check(monkeypatch):
    received = {}

    def recording_check(fn, inputs, **keywords):
        received.update(keywords)
        return "report"

    monkeypatch.setattr("gradviz.testing.check", recording_check)
    names = [n for n, p in inspect.signature(check).parameters.items() if p.kind is p.KEYWORD_ONLY]
    names.remove("raise_exception")
    values = {name: object() for name in names}  # a distinct value per keyword: none may be swapped
    assert assert_gradients(f.Product, f.inputs(), **values) == "report"
    assert received == {**values, "raise_exception": True}


def test_a_keyword_changes_the_verdict_and_raise_exception_is_refused():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    with pytest.raises(gradviz.GradientMismatch, match="multiplied_by_grad_output"):
        assert_gradients(f.NotScaledByGrad, x)
    assert assert_gradients(f.NotScaledByGrad, x, jacobian_only=True).passed
    # what says "got multiple values for keyword argument" from inside check() is refused by name
    with pytest.raises(TypeError, match=r"^assert_gradients\(\) takes no raise_exception.*gradviz\.check\("):
        assert_gradients(f.Product, f.inputs(), raise_exception=False)  # type: ignore[call-arg]


def test_a_misspelt_keyword_is_refused_by_assert_gradients_not_by_check():
    with pytest.raises(TypeError, match=r"^assert_gradients\(\) got an unexpected keyword argument 'epss'$"):
        assert_gradients(f.Product, f.inputs(), epss=1e-6)  # type: ignore[call-arg]


# Each mistake mypy must report (before, the module __getattr__ typed every gradviz.X as Any and
# assert_gradients took check's raise_exception), and real names that must keep their types.
MISTAKES = """\
from collections.abc import Callable
from typing import Any, assert_type

import torch

import gradviz
from gradviz import Reprot
from gradviz import Report, check
from gradviz.testing import assert_gradients


def use(fn: Callable[..., Any], x: torch.Tensor) -> None:
    gradviz.chek(fn, x)
    assert_gradients(fn, x, raise_exception=False)
    assert_gradients(fn, x, epss=1e-6)
    assert_type(gradviz.check(fn, x), Report)
    assert_type(check(fn, x), Report)
    assert_type(assert_gradients(fn, x, eps=1e-6), Report)
    assert_type(gradviz.check(fn, x, raise_exception=False).sweep().passed, bool)
"""


@pytest.mark.slow  # mypy reads torch's stubs: ~12 s with a cold cache, under 1 s warm
def test_mypy_reports_misspelt_names_and_raise_exception_of_assert_gradients(tmp_path):
    snippet = tmp_path / "mistakes.py"
    snippet.write_text(MISTAKES, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(snippet)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    errors = [line.split(": error: ", 1)[1] for line in out.stdout.splitlines() if ": error: " in line]
    assert errors == [
        'Module "gradviz" has no attribute "Reprot"; maybe "Report"?  [attr-defined]',
        'Module has no attribute "chek"; maybe "check"?  [attr-defined]',
        'Unexpected keyword argument "raise_exception" for "assert_gradients"  [call-arg]',
        'Unexpected keyword argument "epss" for "assert_gradients"; did you mean "eps"?  [call-arg]',
    ], out.stdout + out.stderr
