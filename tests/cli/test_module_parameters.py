"""``gradviz check pkg.mod:factory --parameters [NAMES]``: the factory's nn.Module checked through
the worker with its parameters, on a small package in tmp_path; gradcheck over
``functional_call`` (run here on the same module and inputs) is the oracle."""

from __future__ import annotations

import importlib
import json
import textwrap

import pytest
import torch

from gradviz.schema.settings import CheckSettings
from tests.real_world.oracle import module_gradcheck_passes

SOURCE = textwrap.dedent(
    """
    import torch

    class LinearFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            return x @ w.t() + b

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g @ w, g.t() @ x, g.sum(0)

    class HalfWeightFn(LinearFn):
        @staticmethod
        def backward(ctx, g):  # grad_weight halved: wrong
            x, w = ctx.saved_tensors
            return g @ w, 0.5 * (g.t() @ x), g.sum(0)

    class Net(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn
            self.layer = torch.nn.Linear(3, 2)

        def forward(self, x):
            return torch.tanh(self.fn.apply(x, self.layer.weight, self.layer.bias))

    def good():
        torch.manual_seed(0)
        return Net(LinearFn)

    def bad():
        torch.manual_seed(0)
        return Net(HalfWeightFn)

    def example_inputs(device, dtype):
        return (torch.randn(4, 3, device=device, dtype=dtype, requires_grad=True),)
    """
)
PACKAGE = "gradviz_modparams_pkg"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("modparams")
    (root / PACKAGE).mkdir()
    (root / PACKAGE / "__init__.py").write_text("")
    (root / PACKAGE / "nets.py").write_text(SOURCE)
    return root


def _oracle(root, factory: str, names: list[str], monkeypatch) -> bool:
    """gradcheck on the factory's module (float64, as the CLI runs it) over x and ``names``."""
    monkeypatch.syspath_prepend(str(root))
    nets = importlib.import_module(f"{PACKAGE}.nets")
    module = getattr(nets, factory)().to(torch.float64)
    torch.manual_seed(CheckSettings().seed)
    (x,) = nets.example_inputs(torch.device("cpu"), torch.float64)
    return module_gradcheck_passes(module, x, names)


def _check(cli, root, *args: str) -> tuple[int, dict]:
    out = cli("check", f"{PACKAGE}.nets:{args[0]}", *args[1:], "--json", cwd=root)
    return out.returncode, json.loads(out.stdout)


@pytest.mark.parametrize("factory", ["good", "bad"])
def test_all_parameters_give_gradchecks_verdict(cli, package, factory, monkeypatch):
    code, document = _check(cli, package, factory, "--parameters")
    names = [i["name"] for i in document["inputs"]]
    assert names == ["x", "layer.weight", "layer.bias"]
    expected = _oracle(package, factory, names[1:], monkeypatch)
    assert expected == (factory == "good")  # the oracle tells the two apart
    assert document["passed"] == expected and code == (0 if expected else 1)
    failing = [names[b["input"]] for b in document["blocks"] if b["failing"]]
    assert failing == ([] if expected else ["layer.weight"])


def test_the_table_names_the_failing_parameter_block(cli, package):
    out = cli("check", f"{PACKAGE}.nets:bad", "--parameters", cwd=package)
    assert out.returncode == 1
    failing = [line for line in out.stdout.splitlines() if line.startswith("out0 / layer.weight")]
    assert failing and "out0 / x" in out.stdout


def test_named_parameters_are_the_only_ones_checked(cli, package, monkeypatch):
    code, document = _check(cli, package, "bad", "--parameters", "layer.bias")
    assert [i["name"] for i in document["inputs"]] == ["x", "layer.bias"]
    assert document["passed"] == _oracle(package, "bad", ["layer.bias"], monkeypatch)
    assert code == (0 if document["passed"] else 1)


def test_an_unknown_parameter_name_is_refused_with_the_valid_ones(cli, package):
    out = cli("check", f"{PACKAGE}.nets:good", "--parameters", "layer.wieght", cwd=package)
    assert out.returncode == 2
    assert "layer.wieght" in out.stderr and "layer.weight, layer.bias" in out.stderr


def test_a_file_target_with_its_factory_works_and_a_function_class_is_refused(cli, package, monkeypatch):
    nets = package / PACKAGE / "nets.py"
    out = cli("check", f"{nets}:bad", "--parameters", "layer.weight", "--json", cwd=package)
    document = json.loads(out.stdout)
    assert [i["name"] for i in document["inputs"]] == ["x", "layer.weight"]
    assert document["passed"] == _oracle(package, "bad", ["layer.weight"], monkeypatch) is False
    refused = cli("check", f"{nets}:LinearFn", "--parameters", cwd=package)
    assert refused.returncode == 2 and "LinearFn is a torch.autograd.Function" in refused.stderr
