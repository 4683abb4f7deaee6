"""Targets where the Function lives (``pkg.mod:Name``, ``file.py:Name``) and inputs files, loaded
the way the worker loads them; every refusal fed its real bad input."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch

from gradviz.core.check import check_source
from gradviz.core.loader import TargetError, load_inputs_file, load_target
from gradviz.schema.errors import UserCodeError
from gradviz.schema.targets import Target, is_module_target, locate_module, names_a_module, parse_target

OPS = """
import torch

class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x

def doubled(x):
    return Cube.apply(x) * 2

class Holder:
    Inner = Cube

LIMIT = 3
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A package ``shop.ops`` in the current folder, imported fresh for each test."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "ops.py").write_text(textwrap.dedent(OPS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("shop.ops:Cube", Target(module="shop.ops", attribute="Cube")),
        ("shop.ops:Holder.Inner", Target(module="shop.ops", attribute="Holder.Inner")),
        ("dir/f.py:Cube", Target(path="dir/f.py", attribute="Cube")),
        ("dir/f.py", Target(path="dir/f.py")),
        ("linear", Target(path="linear")),
        ("C:/x.py", Target(path="C:/x.py")),
    ],
)
def test_targets_parse_as_entry_points_and_paths(text, expected):
    assert parse_target(text) == expected
    assert is_module_target(text) == (expected.module is not None)


def test_a_file_here_wins_over_a_module_spelled_the_same(tmp_path, monkeypatch):
    """``one.py:Cube`` with one.py in this folder is the file's Cube; without the file it stays a
    module target (package ``one``, module ``py``), as Python would read it."""
    monkeypatch.chdir(tmp_path)
    assert parse_target("one.py:Cube") == Target(module="one.py", attribute="Cube")
    (tmp_path / "one.py").write_text("x = 1\n")
    assert parse_target("one.py:Cube") == Target(path="one.py", attribute="Cube")
    assert not names_a_module("one.py:Cube")


def test_a_module_target_is_imported_from_the_current_folder_and_checked(project):
    assert locate_module("shop.ops", project) == (project / "shop" / "ops.py").resolve()
    loaded = load_target("shop.ops:Cube")
    assert loaded.default_function == "Cube" and loaded.filename == str(
        (project / "shop" / "ops.py").resolve()
    )
    assert sys.path[0] == str(project)
    assert check_source(loaded).passed


@pytest.mark.parametrize("attribute", ["doubled", "Holder.Inner"])
def test_a_callable_or_a_nested_name_is_a_target_too(project, attribute):
    result = check_source(load_target(f"shop.ops:{attribute}"))
    assert result.passed and result.function == attribute


def test_a_file_target_names_what_to_check(project):
    loaded = load_target(f"{project / 'shop' / 'ops.py'}:doubled")
    assert next(iter(loaded.functions)) == "doubled" and check_source(loaded).passed


def test_inputs_file_replaces_example_inputs(project):
    x = torch.linspace(-1, 1, 5, dtype=torch.float64).requires_grad_()
    torch.save((x,), project / "batch.pt")
    result = check_source(load_target("shop.ops:Cube", inputs_path=project / "batch.pt"))
    assert result.passed and result.inputs[0].shape == (5,) and result.blocks[0].shape == (5, 5)
    assert load_inputs_file(project / "batch.pt")[0].requires_grad
    torch.save(x.detach(), project / "one.pt")
    assert len(load_inputs_file(project / "one.pt")) == 1


def test_a_missing_module(project):
    with pytest.raises(TargetError, match=r"No module named 'shop\.opz' \(searched .* first") as caught:
        load_target("shop.opz:Cube")
    assert caught.value.kind == "import"


def test_a_module_whose_own_import_fails_names_its_line(project):
    (project / "shop" / "broken.py").write_text("import torch\nimport not_a_real_dependency\n")
    with pytest.raises(UserCodeError, match=r"Importing shop\.broken raised ModuleNotFoundError") as caught:
        load_target("shop.broken:Cube")
    assert caught.value.lineno == 2 and caught.value.filename.endswith("broken.py")


def test_a_missing_name(project):
    with pytest.raises(TargetError, match=r"has no attribute 'Cub' \(Functions there: Cube\)") as caught:
        load_target("shop.ops:Cub")
    assert caught.value.kind == "unknown_function"


@pytest.mark.parametrize(("name", "what"), [("LIMIT", "an int"), ("Holder", "the class Holder")])
def test_not_a_function(project, name, what):
    with pytest.raises(
        TargetError, match=f"shop.ops:{name} is {what}, not a torch.autograd.Function"
    ) as caught:
        load_target(f"shop.ops:{name}")
    assert caught.value.kind == "no_function"


class Unsafe:
    pass


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"these bytes are not a torch file", "not the zip archive torch.save writes"),
        ("unsafe", "holds a tests.api.test_targets.Unsafe, which loading with weights_only=True refuses"),
        ({"x": torch.ones(2)}, "holds a dict, not a tensor or a tuple of arguments"),
        (3, "holds an int, not a tensor"),
        ("folder", "it is a directory"),
        ("missing", "No such file or directory"),
    ],
    ids=["garbage", "unsafe pickle", "dict", "int", "directory", "missing"],
)
def test_a_bad_inputs_file(tmp_path, content, reason):
    path = tmp_path / "inputs.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "unsafe":
        torch.save((torch.ones(2), Unsafe()), path)
    elif content == "folder":
        path.mkdir()
    elif content != "missing":
        torch.save(content, path)
    with pytest.raises(TargetError, match=reason) as caught:
        load_inputs_file(path)
    assert caught.value.kind == "example_inputs" and "\n" not in caught.value.message
