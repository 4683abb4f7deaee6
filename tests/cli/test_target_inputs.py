"""Inputs that fit the target: an op's inputs come from its schema (a tensor per Tensor, the
schema's defaults, or a one-line refusal naming the argument and --inputs), and a module's
example_inputs goes only to a Function whose forward takes that many arguments. Through the
real CLI, and through the loader the worker uses."""

from __future__ import annotations

import json

import pytest
import torch

from gradviz.core.loader import load_file, load_target
from gradviz.core.prepare import prepare_source
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import CheckSettings

TWO_FUNCTIONS = '''
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class Product3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y, z)
        return x * y * z

    @staticmethod
    def backward(ctx, grad):
        x, y, z = ctx.saved_tensors
        return grad * y * z, grad * x * z, grad * x * y


def example_inputs(device, dtype):
    return tuple(torch.randn(3, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
'''

SCHEMA_OP = '''
import torch

lib = torch.library.Library("{ns}", "DEF")
lib.define("blend(Tensor x, Tensor? w, float alpha{alpha}, int n=2, *, bool flag=False) -> Tensor")
lib.impl("blend", lambda x, w, alpha=0.5, n=2, flag=False: (x * w * alpha) * n, "CompositeExplicitAutograd")
'''


def test_all_gives_example_inputs_only_to_the_function_it_fits(cli, write_source):
    path = write_source(TWO_FUNCTIONS)
    out = cli("check", str(path), "--all", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    square, product = [json.loads(line) for line in out.stdout.splitlines()]
    assert (square["function"], product["function"]) == ("Square", "Product3")
    assert [i["shape"] for i in square["inputs"]] == [[4, 4]]  # drawn: example_inputs is not Square's
    assert any("example_inputs() returns 3 arguments, for Product3" in n and "--inputs" in n for n in square["notes"])
    assert [i["shape"] for i in product["inputs"]] == [[3]] * 3  # example_inputs' own
    assert "forward() takes" not in out.stdout + out.stderr


def test_example_inputs_that_fits_no_function_is_refused_naming_inputs(cli, write_source):
    path = write_source(TWO_FUNCTIONS.replace("for _ in range(3)", "for _ in range(2)"))
    out = cli("check", str(path), "--json")
    assert out.returncode == 2, out.stdout + out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["kind"] == "example_inputs"
    assert error["message"].startswith("example_inputs() returns 2 arguments but Square takes 1 argument (x)")
    assert "--inputs" in error["message"] and "\n" not in error["message"]
    assert error["lineno"] == TWO_FUNCTIONS.lstrip("\n").splitlines().index("def example_inputs(device, dtype):") + 1


def test_an_inputs_file_that_does_not_fit_is_refused_naming_inputs(cli, write_source, tmp_path):
    path = write_source(TWO_FUNCTIONS)
    saved = tmp_path / "two.pt"
    torch.save((torch.randn(3, dtype=torch.float64),) * 2, saved)
    out = cli("check", f"{path}:Product3", "--inputs", str(saved), "--json")
    assert out.returncode == 2, out.stdout + out.stderr
    message = json.loads(out.stdout)["error"]["message"]
    assert message.startswith(f"--inputs {saved} holds 2 arguments but Product3 takes 3 arguments (x, y, z)")


def test_an_ops_float_without_default_is_refused_in_one_line(cli, write_source):
    path = write_source(SCHEMA_OP.format(ns="gvtest_inputs_cli", alpha=""))
    out = cli("check", str(path), "--json")
    assert out.returncode == 2, out.stdout + out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["kind"] == "example_inputs"
    assert error["message"].startswith("gvtest_inputs_cli::blend's argument alpha (float) has no default")
    assert "--inputs" in error["message"] and "\n" not in error["message"]
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr  # no torch cast error below it


def test_an_ops_inputs_come_from_its_schema(write_source):
    path = write_source(SCHEMA_OP.format(ns="gvtest_inputs_schema", alpha="=0.25"))
    loaded = load_file(path)
    inputs = prepare_source(loaded, None, CheckSettings()).inputs
    x, w = inputs.args  # alpha, n and flag keep their defaults: nothing after w need be passed
    assert inputs.names == ["x", "w"]
    assert all(isinstance(t, torch.Tensor) and t.requires_grad and t.shape == (4, 4) for t in (x, w))
    assert any("random 4×4 tensors for x, w" in n for n in loaded.notes)


def test_a_tensor_list_without_default_is_refused_naming_inputs(write_source):
    path = write_source(
        """
        import torch

        lib = torch.library.Library("gvtest_inputs_list", "DEF")
        lib.define("total(Tensor[] xs) -> Tensor")
        lib.impl("total", lambda xs: sum(xs), "CompositeExplicitAutograd")
        """
    )
    with pytest.raises(UserCodeError, match=r"argument xs \(List\[Tensor\]\) has no default.*--inputs"):
        prepare_source(load_file(path), None, CheckSettings())


def test_a_module_target_with_another_functions_example_inputs_gets_drawn_inputs(write_source, monkeypatch):
    path = write_source(TWO_FUNCTIONS, "two_functions_mod.py")
    monkeypatch.chdir(path.parent)
    loaded = load_target("two_functions_mod:Square")
    inputs = prepare_source(loaded, None, CheckSettings()).inputs
    assert [tuple(a.shape) for a in inputs.args] == [(4, 4)]
