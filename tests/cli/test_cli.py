"""The command line. The version, a passing check, the start without a display and a check from
another folder run in a subprocess the way CI scripts run them; the other commands run in this
process (the ``cli`` fixture), served by one worker for the module."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gradviz import __version__
from tests.cli.runner import gradviz
from tests.paths import ROOT
from tests.sources import SQUARE

BUGGY = SQUARE.replace("return 2 * x * g", "return x * g")
NOISY = SQUARE.replace("return x * x", "print('hello from forward'); return x * x")
NAN = SQUARE.replace("return 2 * x * g", "return 2 * x * g / 0 * 0")


def test_version():
    out = gradviz("--version")
    assert out.returncode == 0 and __version__ in out.stdout


def test_pass_exits_zero_with_table(write_source):
    out = gradviz("check", str(write_source(SQUARE)))
    assert out.returncode == 0, out.stderr
    assert "PASSED" in out.stdout and "out0 / x" in out.stdout


def test_fail_exits_one_and_names_worst_cell(cli, write_source):
    out = cli("check", str(write_source(BUGGY)))
    assert out.returncode == 1
    assert "FAILED" in out.stdout and "out0[" in out.stdout and "analytic" in out.stdout
    assert "factor" in out.stdout  # the hint: analytic = 0.5 x numerical


def test_user_code_error_exits_two_without_python_internals(cli, write_source):
    path = write_source(SQUARE.replace("return x * x", "return x * y"))
    out = cli("check", str(path))
    assert out.returncode == 2
    assert "NameError" in out.stderr and f"{path.resolve()}" in out.stderr
    assert "site-packages" not in out.stderr and "gradviz/core" not in out.stderr


@pytest.mark.parametrize(
    "args",
    [["--device", "cuda:7"], ["--eps", "-1"], ["--function", "Nope"]],
)
def test_bad_arguments_exit_two(cli, write_source, args):
    out = cli("check", str(write_source(SQUARE)), *args)
    assert out.returncode == 2 and out.stderr.startswith("gradviz: error:")


def test_missing_file_exits_two(cli, tmp_path):
    out = cli("check", str(tmp_path / "nope.py"))
    assert out.returncode == 2 and "Cannot read" in out.stderr


def test_json_schema_and_user_prints_kept_off_stdout(cli, write_source):
    out = cli("check", str(write_source(NOISY)), "--json")
    assert out.returncode == 0
    data = json.loads(out.stdout)  # stdout is exactly one JSON object
    assert "hello from forward" in out.stderr
    assert set(data) >= {
        "function",
        "device",
        "dtype",
        "passed",
        "inputs",
        "outputs",
        "blocks",
        "warnings",
        "seconds",
    }
    assert data["inputs"] == [{"index": 0, "name": "x", "shape": [3], "dtype": "float64", "requires_grad": True}]
    assert data["outputs"] == [{"index": 0, "shape": [3], "dtype": "float64", "differentiable": True}]
    block = data["blocks"][0]
    assert {"output", "input", "rows", "cols", "max_abs_error", "failing", "worst"} <= set(block)
    assert (block["rows"], block["cols"]) == (3, 3)
    assert set(data["seconds"]) == {"analytic", "numerical", "total"}


def test_json_is_strict_with_non_finite_values(cli, write_source):
    out = cli("check", str(write_source(NAN)), "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert data["blocks"][0]["max_abs_error"] in ("inf", "nan")
    assert data["blocks"][0]["failing"] == 9
    assert any("NaN or Inf" in w for w in data["warnings"])


def test_json_error_object(cli, write_source):
    out = cli("check", str(write_source("x = (")), "--json")
    assert out.returncode == 2
    assert json.loads(out.stdout)["error"]["kind"] == "syntax"


def test_save_writes_both_jacobians_equal_to_torch(cli, write_source, tmp_path):
    out = cli("check", str(write_source(BUGGY)), "--save", str(tmp_path / "arrays"))
    assert out.returncode == 1
    analytic = np.load(tmp_path / "arrays" / "analytic_o0_i0.npy")
    numerical = np.load(tmp_path / "arrays" / "numerical_o0_i0.npy")
    assert analytic.dtype == numerical.dtype == np.float64 and analytic.shape == (3, 3)
    torch.manual_seed(0)
    x = torch.randn(3, dtype=torch.float64)
    np.testing.assert_allclose(
        numerical, torch.autograd.functional.jacobian(lambda t: t * t, x).numpy(), atol=1e-8
    )
    np.testing.assert_allclose(analytic, np.diag(x.numpy()))  # the buggy backward: g * x


def test_builtin_name_and_list(cli):
    listed = cli("list")
    assert listed.returncode == 0 and "Seed examples:" in listed.stdout and "linear" in listed.stdout
    out = cli("check", "linear")
    assert out.returncode == 0 and "LinearFunction" in out.stdout


def test_no_arguments_without_display_points_to_check():
    out = gradviz()
    assert out.returncode == 2 and "gradviz check" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_memory_json_matches_the_core_study(cli):
    from gradviz.core.memory import conv_bn_study

    out = cli("memory", "--layers", "2", "--shape", "2,3,12,12", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"device", "layers", "shape", "variants", "saved_difference_bytes", "formula_bytes"}
    assert data["saved_difference_bytes"] == data["formula_bytes"]
    assert data["outputs_match"] and data["grads_match"]
    study = conv_bn_study(2, (2, 3, 12, 12)).to_dict()
    assert data["variants"]["fused"]["saved_bytes"] == study["variants"]["fused"]["saved_bytes"]
    assert data["variants"]["unfused"]["saved_bytes"] == study["variants"]["unfused"]["saved_bytes"]


@pytest.mark.parametrize("args", [["--layers", "40"], ["--shape", "1,2"], ["--device", "cuda:9"]])
def test_memory_bad_arguments_exit_two(cli, args):
    out = cli("memory", *args)
    assert out.returncode == 2 and out.stderr.startswith("gradviz: error:")


def _real_graph_names(name: str) -> list[str]:
    """Names of every node reachable from the real outputs of the built-in example, via torch."""
    from gradviz.core.loader import choose_function, load_file
    from gradviz.schema.library import find_builtin

    loaded = load_file(find_builtin(name))
    torch.manual_seed(0)
    out = choose_function(loaded).apply(*loaded.example_inputs(torch.device("cpu"), torch.float64))
    outs = out if isinstance(out, tuple) else (out,)
    seen, stack = set(), [o.grad_fn for o in outs if isinstance(o, torch.Tensor) and o.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return sorted(node.name().removeprefix("torch::autograd::") for node in seen)


@pytest.mark.parametrize("name", ["linear", "fused_conv_bn", "abs_product"])
def test_graph_json_matches_the_real_graph(cli, name):
    out = cli("graph", name, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert sorted(n["name"] for n in data["nodes"]) == _real_graph_names(name)
    ids = {n["id"] for n in data["nodes"]}
    assert all(a in ids and b in ids for a, b in data["edges"])
    assert sorted(data["backward_order"]) == sorted(n["id"] for n in data["nodes"])
    for node in data["nodes"]:
        for saved in node["saved"]:
            assert saved["via"] in ("save_for_backward", "ctx_attribute", "builtin")
            dtype_size = torch.empty((), dtype=getattr(torch, saved["dtype"].removeprefix("torch."))).element_size()
            assert saved["bytes"] >= dtype_size * int(np.prod(saved["shape"]))
    if name == "fused_conv_bn":
        custom = next(n for n in data["nodes"] if n["kind"] == "custom")
        assert {s["name"] for s in custom["saved"] if s["via"] == "ctx_attribute"} == {"sum", "sqrt_var"}


def test_graph_text_and_errors(cli, write_source):
    out = cli("graph", "linear")
    assert out.returncode == 0 and "LinearFunctionBackward" in out.stdout and "backward order" in out.stdout
    broken = cli("graph", str(write_source(SQUARE.replace("return x * x", "return x * y"))))
    assert broken.returncode == 2
    assert "NameError" in broken.stderr and "line" in broken.stderr
    assert "Traceback (most recent call last)" not in broken.stderr


REAL_WORLD = ROOT / "tests" / "real_world"


def test_a_function_imported_from_a_sibling_package_is_found_from_any_directory(tmp_path):
    """The file's own folder is on sys.path (as for ``python file.py``), wherever gradviz starts."""
    out = gradviz("check", str(REAL_WORLD / "realpkg_cube.py"), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["function"] == "MyCube" and report["passed"]
    # setup_context style: forward(x) has no ctx, so the input is named x, not shifted by one
    assert [i["name"] for i in report["inputs"]] == ["x"]


def test_function_flag_finds_an_imported_function_by_name(cli, write_source):
    source = SQUARE + "\nfrom torch.nn.modules._functions import BackwardHookFunction  # noqa: F401\n"
    path = write_source(source)
    out = cli("check", str(path), "--function", "BackwardHookFunction", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["function"] == "BackwardHookFunction"
    listed = cli("check", str(path), "--function", "Nope")
    assert listed.returncode == 2
    # its own Function first, then the imported one
    assert "this source defines Square, BackwardHookFunction" in listed.stderr


def test_default_checks_are_named_lines_and_jacobian_only_drops_them(cli, write_source):
    # a backward that ignores grad_output of a scalar output: the Jacobian is right (one row, g = 1)
    source = SQUARE.replace("return x * x", "return (x * x).sum()").replace("return 2 * x * g", "return 2 * x")
    path = write_source(source)
    out = cli("check", str(path), "--json")
    assert out.returncode == 1
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert list(checks) == ["reentrant", "multiplied_by_grad_output", "undefined_output_grads"]
    assert not checks["multiplied_by_grad_output"]["passed"]
    assert "x[" in checks["multiplied_by_grad_output"]["detail"]  # which input, where, the value
    table = cli("check", str(path))
    assert "multiplied_by_grad_output  failed" in table.stdout
    only = cli("check", str(path), "--jacobian-only", "--json")
    assert only.returncode == 0 and json.loads(only.stdout)["checks"] == []
