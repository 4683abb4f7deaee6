"""Report.save writes what it says; reproducer scripts rebuild the exact inputs and exit with
gradcheck's verdict, whether the Function is imported or written out as source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import gradviz
from gradviz.api.literals import LIST_LIMIT, NotWritable, literal, needs_helper
from gradviz.api.locate import reach
from gradviz.core.loader import load_source
from tests.api import functions as f
from tests.paths import ROOT
from tests.real_world import oracle

SOURCE = """
import math
import torch

SCALE = 2.5
OFFSET = float("inf")


def slope(x):
    return SCALE * x.cos()


class Wavy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return SCALE * x.sin() + math.pi

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * slope(x) * BUGGY_FACTOR


BUGGY_FACTOR = 1.0
"""


def gradcheck_passes(fn, args) -> bool:
    """gradcheck's verdict, quiet; raising counts as failing."""
    return oracle.gradcheck_passes(fn, args, quiet=True, failing_on=(Exception,))


def test_save_writes_json_arrays_figures_and_a_reproducer(tmp_path):
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    written = report.save(tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == sorted(
        ["report.json", "report.npz", "message.txt", "reproducer.py"]
        + [f"figure_o0_i{j}.svg" for j in (0, 1)]
        + [f"{k}_o0_i{j}.png" for k in ("analytic", "numerical", "error") for j in (0, 1)]
    )
    assert all(p.stat().st_size > 0 for p in written)
    summary = json.loads((tmp_path / "out" / "report.json").read_text())
    arrays = np.load(tmp_path / "out" / "report.npz", allow_pickle=False)
    for entry, block in zip(summary["blocks"], report.blocks):
        for kind, key in entry["arrays"].items():
            np.testing.assert_array_equal(arrays[key], getattr(block, kind))
        assert entry["out_shape"] == list(block.out_shape)
    assert (tmp_path / "out" / "message.txt").read_text().strip() == report.message()


@pytest.mark.parametrize(
    "value",
    [
        torch.tensor([[1.5, float("nan")], [float("inf"), -0.0]], dtype=torch.float64),
        torch.randn(3, 5, dtype=torch.float32).t(),  # strides kept
        torch.randn(LIST_LIMIT + 7, dtype=torch.float64).requires_grad_(),  # written as bytes
        torch.randn(9, 10).to(torch.bfloat16),
        torch.arange(100).reshape(10, 10).t(),  # a large transposed integer tensor
        torch.tensor([True, False]),
        torch.tensor(3.25, dtype=torch.float64),
        (2, 0.1, None, "mean", [1, 2], {"k": float("-inf")}, torch.float32),
    ],
    ids=["nan-inf", "transposed", "bytes", "bfloat16", "int-bytes", "bool", "0-dim", "python values"],
)
def test_literals_rebuild_values_exactly(value):
    import base64  # noqa: F401 (the helper the text may call uses it)

    from gradviz.api.literals import TENSOR_HELPER

    scope = {"torch": torch}
    exec("import base64\n" + TENSOR_HELPER, scope)
    rebuilt = eval(literal(value), scope)
    assert needs_helper(value) == ("tensor_from_bytes" in literal(value))
    if isinstance(value, torch.Tensor):
        assert (
            rebuilt.dtype == value.dtype
            and rebuilt.shape == value.shape
            and rebuilt.stride() == value.stride()
        )
        assert rebuilt.requires_grad == value.requires_grad and rebuilt.is_leaf
        torch.testing.assert_close(rebuilt, value.detach(), rtol=0, atol=0, equal_nan=True)
    else:
        assert repr(rebuilt) == repr(value)


def test_what_a_script_cannot_rebuild_is_named():
    with pytest.raises(NotWritable, match="an object cannot be written into a script"):
        literal(object())


def test_a_function_from_user_source_is_written_out_with_what_it_uses():
    """A Function gradviz's own loader ran (no importable module, like a notebook's) travels as source."""
    loaded = load_source(textwrap.dedent(SOURCE), "<notebook cell>")
    where = reach(loaded.functions["Wavy"])
    assert where.module is None and where.call == "Wavy.apply"
    assert "import math" in where.source and "SCALE = 2.5" in where.source and "def slope(x):" in where.source
    assert "BUGGY_FACTOR = 1.0" in where.source and "OFFSET" not in where.source  # only what it reads
    scope: dict = {}
    exec(where.source, scope)
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.equal(scope["Wavy"].apply(x), loaded.functions["Wavy"].apply(x))


def test_a_global_that_cannot_be_written_is_refused_by_name():
    source = textwrap.dedent(SOURCE).replace("BUGGY_FACTOR = 1.0", "BUGGY_FACTOR = memoryview(b'1')")
    loaded = load_source(source, "<cell>")
    with pytest.raises(NotWritable, match=r"global 'BUGGY_FACTOR' \(a memoryview\)"):
        reach(loaded.functions["Wavy"])


def test_an_importable_function_is_imported():
    where = reach(f.WrongSign.apply)
    assert (where.module, where.name, where.call) == ("tests.api.functions", "WrongSign", "WrongSign.apply")
    assert where.root == str(ROOT)
    assert reach(f.scaled_product).call == "scaled_product"


def test_reproducers_run_on_their_own_and_exit_with_gradchecks_verdict(tmp_path):
    imported_fn, imported_args = f.WrongSign, f.inputs()
    loaded = load_source(textwrap.dedent(SOURCE), "<notebook cell>")
    written_fn = loaded.functions["Wavy"]
    written_args = (torch.randn(70, dtype=torch.float64, requires_grad=True),)  # > LIST_LIMIT: bytes
    cases = {
        "imported": (imported_fn, imported_args, gradcheck_passes(imported_fn.apply, imported_args)),
        "written": (written_fn, written_args, gradcheck_passes(written_fn.apply, written_args)),
    }
    assert [expected for *_, expected in cases.values()] == [False, True]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # torch only: not even gradviz
    started = {}
    for name, (fn, args, _) in cases.items():
        report = gradviz.check(fn, args, raise_exception=False)
        script = tmp_path / f"{name}.py"
        script.write_text(report.reproducer())
        started[name] = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=300)
        expected = cases[name][2]
        assert process.returncode == (0 if expected else 1), stdout + stderr
        assert ("gradcheck passed" if expected else "gradcheck FAILED") in stdout
