"""Custom ops (``torch.library.custom_op`` + ``register_autograd``) as first class
as a Function: named ``ns::name`` with the schema's argument names, found in files, written into a
reproducer, named in the graph, and checked by ``torch.library.opcheck``'s tests as named checks
(warned beside gradcheck's verdict, which they leave alone).

The oracles are PyTorch's: ``torch.autograd.gradcheck`` on the op for the gradient verdict, and
``torch.library.opcheck`` (its result computed here) for each opcheck outcome. The ops live in
``custom_ops_collection`` (namespace ``gvtest_cop``), imported once: ops are global to a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.core.callables import as_checkable
from gradviz.core.graph import extract_graph
from gradviz.core.loader import choose_function, load_target
from gradviz.core.opcheck_checks import OPCHECK_TESTS
from gradviz.schema.results import PASSED, WARNED
from tests.cli.runner import check_document
from tests.paths import ROOT

from . import custom_ops_collection as ops
from . import oracle

FILE = Path(ops.__file__)
WRONG_OPCHECK = {"cube_wrong_fake", "cube_wrong_schema"}  # opcheck fails these; their gradients are right


def _gradcheck(op, args) -> bool:
    return oracle.gradcheck_passes(op, args, quiet=True, failing_on=(Exception,))


def _opcheck(op, args) -> dict[str, bool]:
    """opcheck's own verdict per test, on clones (a wrong schema writes into its inputs)."""
    call = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = torch.library.opcheck(op, call, raise_exception=False)
    assert set(found) == set(OPCHECK_TESTS)
    return {test: value == "SUCCESS" for test, value in found.items()}


def _gradient_verdict(report) -> bool:
    """gradviz's verdict without the opcheck outcomes: the one that must equal gradcheck's."""
    return all(b.passed for b in report.result.blocks) and not any(
        c.failed for c in report.result.checks if not c.name.startswith("opcheck_")
    )


def _opcheck_ok(outcome) -> bool:
    """An opcheck outcome passed; a failing one is "warned" (outside the verdict) by default."""
    assert outcome.status in (PASSED, WARNED), outcome
    return outcome.status == PASSED


@pytest.mark.parametrize(
    "op",
    [ops.affine, torch.ops.gvtest_cop.affine, torch.ops.gvtest_cop.affine.default],
    ids=["CustomOpDef", "OpOverloadPacket", "OpOverload"],
)
def test_report_names_the_op_and_its_schema_arguments(op):
    report = gradviz.check(op, ops.inputs_for("affine"))
    assert report.function == "gvtest_cop::affine"
    assert [i.name for i in report.result.inputs] == [a.name for a in torch.ops.gvtest_cop.affine.default._schema.arguments]
    assert [i.name for i in report.result.inputs] == ["x", "weight", "bias"]
    text = str(report)
    assert "gvtest_cop::affine" in text and "out0 / weight" in text and "out0 / bias" in text
    assert "CustomOpDef" not in text and "pybind11" not in text and "in0" not in text


@pytest.mark.parametrize("name", ops.OPS)
def test_api_verdicts_are_gradchecks_and_opchecks(name):
    op = getattr(ops, name)
    expected = _gradcheck(op, ops.inputs_for(name))
    expected_opcheck = _opcheck(op, ops.inputs_for(name))
    assert expected == (name != "cube_wrong_backward")  # the collection itself is what it says
    assert all(expected_opcheck.values()) == (name not in WRONG_OPCHECK)
    report = gradviz.check(op, ops.inputs_for(name), raise_exception=False)
    assert _gradient_verdict(report) == expected, report
    outcomes = {c.name: c for c in report.result.checks}
    for test, check_name in OPCHECK_TESTS.items():
        assert _opcheck_ok(outcomes[check_name]) == expected_opcheck[test], (check_name, outcomes[check_name].detail)
        if not expected_opcheck[test]:
            assert test in outcomes[check_name].detail and "\n" not in outcomes[check_name].detail
    assert report.passed == expected  # gradcheck's verdict: opcheck's findings are warnings beside it


def test_opcheck_passes_a_wrong_backward_that_gradviz_fails():
    op = ops.cube_wrong_backward
    assert all(_opcheck(op, ops.inputs_for("cube_wrong_backward")).values())
    report = gradviz.check(op, ops.inputs_for("cube_wrong_backward"), raise_exception=False)
    assert not report.passed and report.result.blocks[0].n_failing > 0
    assert all(c.passed for c in report.result.checks)  # the Jacobian comparison alone fails it


def test_a_function_gets_no_opcheck_outcomes():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    report = gradviz.check(Cube, ops.inputs_for("cube"))
    assert not [c for c in report.result.checks if c.name.startswith("opcheck_")]


def test_module_discovery_finds_the_ops_by_name_and_by_global():
    """By module target (imported already: running the file again here would register its ops again)."""
    loaded = load_target(f"{ops.__name__}:affine")
    assert sorted(loaded.functions) == sorted(f"gvtest_cop::{n}" for n in ops.OPS)
    assert loaded.default_function == "gvtest_cop::affine"  # the op's name, however it was reached
    assert choose_function(loaded).op is ops.affine
    assert choose_function(loaded, "cube").op is ops.cube  # the global that holds it
    assert choose_function(loaded, "gvtest_cop::cube").op is ops.cube


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for display in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(display, None)
    return subprocess.run(
        [sys.executable, "-m", "gradviz", "check", *args, "--json"],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    "name, how",
    [("cube_wrong_fake", "--function"), ("affine", "target")],  # the others: through the API above
)
def test_cli_checks_an_op_of_a_file(name, how, tmp_path):
    """``--function NAME`` or ``file.py:NAME``: the op by the global that holds it."""
    args = ops.inputs_for(name)
    inputs = tmp_path / "inputs.pt"
    torch.save(tuple(a.detach().requires_grad_(a.requires_grad) for a in args), inputs)
    expected = _gradcheck(getattr(ops, name), ops.inputs_for(name))
    expected_opcheck = _opcheck(getattr(ops, name), args)
    target = [str(FILE), "--function", name] if how == "--function" else [f"{FILE}:{name}"]
    run = _cli(*target, "--inputs", str(inputs), cwd=tmp_path)
    payload = json.loads(run.stdout)
    check_document("check", payload)  # the JSON Schema that ships with gradviz
    assert payload["function"] == f"gvtest_cop::{name}"
    assert sorted(payload["functions"]) == sorted(f"gvtest_cop::{n}" for n in ops.OPS)
    assert [i["name"] for i in payload["inputs"]] == [a.name for a in getattr(ops, name)._opoverload._schema.arguments]
    outcomes = {c["name"]: c["status"] for c in payload["checks"]}
    assert all(outcomes[OPCHECK_TESTS[t]] == (PASSED if ok else WARNED) for t, ok in expected_opcheck.items())
    gradient = all(b["failing"] == 0 for b in payload["blocks"])
    assert gradient == expected
    assert payload["passed"] == expected
    assert run.returncode == (0 if payload["passed"] else 1), run.stderr[-2000:]


@pytest.mark.parametrize(
    "op",
    [ops.cube_wrong_backward, torch.ops.gvtest_cop.cube, ops.cube_wrong_fake],
    ids=["wrong-backward", "torch.ops", "wrong-fake"],
)
def test_reproducer_runs_alone_and_gives_gradchecks_verdict_and_opchecks_warnings(op, tmp_path):
    """The script imports the op's module (no PYTHONPATH), runs gradcheck, then opcheck's tests,
    whose failures it prints as warnings, as gradviz does."""
    args = ops.inputs_for("cube")
    report = gradviz.check(op, args, raise_exception=False)
    script = tmp_path / "repro.py"
    script.write_text(report.reproducer())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    expected, opchecked = _gradcheck(op, args), _opcheck(op, args)
    assert run.returncode == (0 if expected else 1), run.stdout[-1000:] + run.stderr[-2000:]
    assert ("gradcheck passed" if expected else "gradcheck FAILED") in run.stdout
    if expected:
        assert [t for t, ok in opchecked.items() if not ok] == [
            line.split(":")[1].strip() for line in run.stdout.splitlines() if line.startswith("opcheck WARNED")
        ]
    assert report.passed == (run.returncode == 0)


def test_graph_names_the_ops_backward_node():
    graph = extract_graph(as_checkable(ops.affine), ops.inputs_for("affine"))
    custom = [n for n in graph.nodes if n.kind == "custom"]
    assert [n.class_name for n in custom] == ["gvtest_cop::affine"]
    assert "gvtest_cop::affine" in custom[0].name and "GeneratedBackwardFor" not in custom[0].name
    assert [s.name for s in custom[0].saved] == ["x", "weight"]  # named from setup_context's save_for_backward
    assert [n.input_name for n in graph.nodes if n.kind == "leaf"] == ["x", "weight", "bias"]


def test_show_starts_the_window_on_the_op_by_import(tmp_path):
    """``gradviz.show(op, x)``: the window's worker imports the op's module (its registrations
    run there) and checks the op by the global that holds it, called ns::name."""
    from gradviz.api.arguments import settings_for
    from gradviz.api.window import prepare_launch

    args = ops.inputs_for("cube")
    settings, _ = settings_for(args)
    launch = prepare_launch(torch.ops.gvtest_cop.cube_wrong_backward, args, settings, folder=tmp_path)
    assert launch.target == f"{ops.__name__}:cube_wrong_backward"
    loaded = load_target(launch.target)  # what the window's worker does with it (imported here already)
    assert loaded.default_function == "gvtest_cop::cube_wrong_backward"
    assert choose_function(loaded).op is ops.cube_wrong_backward


def test_opcheck_that_cannot_run_is_one_warned_line_naming_the_test(monkeypatch):
    def broken(op, args, test_utils, raise_exception):
        raise RuntimeError("tracing broke\nsecond line of a long traceback")

    monkeypatch.setattr(torch.library, "opcheck", broken)
    report = gradviz.check(ops.cube, ops.inputs_for("cube"), raise_exception=False)
    found = {c.name: c for c in report.result.checks if c.name.startswith("opcheck_")}
    assert list(found) == list(OPCHECK_TESTS.values()) and report.passed  # cube's gradient is right
    for test, name in OPCHECK_TESTS.items():
        assert found[name].status == WARNED and test in found[name].detail and "\n" not in found[name].detail
        assert "tracing broke" in found[name].detail and "second line" not in found[name].detail


def test_jacobian_only_runs_no_opcheck():
    report = gradviz.check(ops.cube_wrong_fake, ops.inputs_for("cube"), jacobian_only=True)
    assert report.passed and not report.result.checks


def test_pytorchs_own_op_is_named_and_gets_no_opcheck():
    """``torch.ops.aten.mul.Tensor``: named by its schema too; opcheck is for the user's ops only."""
    args = (torch.randn(3, dtype=torch.float64, requires_grad=True), torch.randn(3, dtype=torch.float64, requires_grad=True))
    report = gradviz.check(torch.ops.aten.mul.Tensor, args)
    assert report.function == "aten::mul.Tensor" and [i.name for i in report.result.inputs] == ["self", "other"]
    assert report.passed == _gradcheck(torch.ops.aten.mul.Tensor, args)
    assert not [c for c in report.result.checks if c.name.startswith("opcheck_")]
