"""Operators registered the other ways PyTorch documents (``torch.library.Library(ns, "DEF")`` +
``define`` + ``impl``, autograd from ``torch.library.register_autograd("ns::name", ...)``), which no
global of the file holds: found among the dispatcher's registrations, by qualified name, by the
loader, ``gradviz check FILE``, ``--all`` and ``FILE.py:ns::name``. Verdicts are gradcheck's,
computed here on the inputs the CLI draws (the schema's tensors under the check's seed)."""

from __future__ import annotations

import json

import torch

import gradviz
from gradviz.core.loader import load_file
from gradviz.schema.settings import CheckSettings
from tests.real_world.oracle import load_module

OPS = '''
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


lib = torch.library.Library("{ns}", "DEF")
lib.define("scale(Tensor x, float alpha=2.0) -> Tensor")
lib.define("scale.shifted(Tensor x, float alpha=2.0, float shift=1.0) -> Tensor")
lib.define("cube_wrong(Tensor x) -> Tensor")
lib.impl("scale", lambda x, alpha=2.0: x * alpha, "CompositeExplicitAutograd")
lib.impl("scale.shifted", lambda x, alpha=2.0, shift=1.0: x * alpha + shift, "CompositeExplicitAutograd")
lib.impl("cube_wrong", lambda x: x**3, "CompositeExplicitAutograd")


def keep_alpha(ctx, inputs, output):
    ctx.alpha = inputs[1] if len(inputs) > 1 else 2.0


def keep_x(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def cube_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return 2 * x * x * grad  # wrong: d(x^3)/dx is 3x^2


torch.library.register_autograd("{ns}::scale", lambda ctx, g: (g * ctx.alpha, None), setup_context=keep_alpha)
torch.library.register_autograd(
    "{ns}::scale.shifted", lambda ctx, g: (g * ctx.alpha, None, None), setup_context=keep_alpha
)
torch.library.register_autograd("{ns}::cube_wrong", cube_backward, setup_context=keep_x)
'''


def _drawn_x() -> torch.Tensor:
    """The one tensor the CLI draws for each of these ops (its other arguments keep their defaults)."""
    torch.manual_seed(CheckSettings().seed)
    return torch.randn(4, 4, dtype=torch.float64, requires_grad=True)


def _gradcheck(op) -> bool:
    return torch.autograd.gradcheck(op, (_drawn_x(),), raise_exception=False)


def test_check_all_finds_every_operator_with_gradchecks_verdict(cli, write_source):
    ns = "gvtest_reg_all"
    path = write_source(OPS.format(ns=ns), "ops.py")
    load_module(path)  # registers the ops here too, for the oracle
    expected = {
        f"{ns}::scale": _gradcheck(torch.ops.gvtest_reg_all.scale.default),
        f"{ns}::scale.shifted": _gradcheck(torch.ops.gvtest_reg_all.scale.shifted),
        f"{ns}::cube_wrong": _gradcheck(torch.ops.gvtest_reg_all.cube_wrong.default),
    }
    assert sorted(expected.values()) == [False, True, True]
    out = cli("check", str(path), "--all", "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    documents = [json.loads(line) for line in out.stdout.splitlines()]
    verdicts = {d["function"]: d["passed"] for d in documents}
    assert verdicts == {"Square": True, **expected}
    assert [d["target"] for d in documents] == [f"{path}:{name}" for name in verdicts]
    assert documents[0]["functions"] == list(verdicts)  # what the window's list shows after a run
    assert "No torch.autograd.Function subclass or custom op" not in out.stderr


def test_a_file_target_names_an_operator_and_its_overload(cli, write_source):
    path = write_source(OPS.format(ns="gvtest_reg_one"), "ops.py")
    out = cli("check", f"{path}:gvtest_reg_one::scale.shifted", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["function"] == "gvtest_reg_one::scale.shifted"
    assert [i["name"] for i in data["inputs"]] == ["x"]  # alpha and shift keep the schema's defaults
    missing = cli("check", f"{path}:gvtest_reg_one::nope", "--json")
    assert missing.returncode == 2
    assert "registers no operator gvtest_reg_one::nope" in json.loads(missing.stdout)["error"]["message"]


def test_the_loader_finds_operators_registered_by_the_file_and_by_what_it_imports(write_source):
    write_source(
        '''
        import torch

        lib = torch.library.Library("gvtest_reg_helper", "DEF")
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: 2 * x, "CompositeExplicitAutograd")
        torch.library.register_autograd("gvtest_reg_helper::twice", lambda ctx, g: 2 * g)
        ''',
        "reg_helper.py",
    )
    path = write_source(
        '''
        import torch
        import reg_helper  # registers gvtest_reg_helper::twice; no global holds the op

        lib = torch.library.Library("gvtest_reg_own", "DEF")
        lib.define("neg(Tensor x) -> Tensor")
        lib.impl("neg", lambda x: -x, "CompositeExplicitAutograd")
        torch.library.register_autograd("gvtest_reg_own::neg", lambda ctx, g: -g)
        ''',
        "reg_main.py",
    )
    loaded = load_file(path)
    assert list(loaded.functions) == ["gvtest_reg_own::neg", "gvtest_reg_helper::twice"]  # its own first
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    for op in (torch.ops.gvtest_reg_own.neg, torch.ops.gvtest_reg_helper.twice):
        assert gradviz.check(op, (x,)).passed == torch.autograd.gradcheck(op, (x,))


def test_operators_of_an_installed_library_the_file_imports_are_not_the_users(write_source, tmp_path, monkeypatch):
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "gvtestlib").mkdir(parents=True)
    (site / "gvtestlib" / "__init__.py").write_text(
        "import torch\n"
        "lib = torch.library.Library('gvtestlib', 'DEF')\n"
        "lib.define('nms(Tensor boxes, float iou_threshold) -> Tensor')\n",
        encoding="utf-8",
    )  # as torchvision registers torchvision::nms when it is imported
    monkeypatch.syspath_prepend(str(site))
    path = write_source(
        '''
        import torch
        import gvtestlib

        lib = torch.library.Library("gvtest_reg_mine", "DEF")
        lib.define("neg(Tensor x) -> Tensor")
        lib.impl("neg", lambda x: -x, "CompositeExplicitAutograd")
        torch.library.register_autograd("gvtest_reg_mine::neg", lambda ctx, g: -g)
        ''',
        "uses_lib.py",
    )
    assert list(load_file(path).functions) == ["gvtest_reg_mine::neg"]
    assert torch.ops.gvtestlib.nms.default._schema.name == "gvtestlib::nms"  # registered all the same
