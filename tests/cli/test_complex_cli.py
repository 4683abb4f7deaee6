"""Complex Functions through the worker: gradcheck's verdict, and the sweep, from a file."""

from __future__ import annotations

import json

import pytest
import torch

from tests.cli.refusal_sources import fn_source
from tests.real_world.oracle import gradcheck_passes

CASES = {
    # forward, backward, inputs
    "complex_output_right": ("return torch.complex(x, 2 * x)", "return g.real + 2 * g.imag", "torch.randn(3, device=device, dtype=dtype, requires_grad=True)"),
    "complex_output_wrong": ("return torch.complex(x, 2 * x)", "return g.real", "torch.randn(3, device=device, dtype=dtype, requires_grad=True)"),
    "complex_input_right": ("return x.real * 2", "return torch.complex(g * 2, torch.zeros_like(g))", "torch.randn(3, device=device, dtype=torch.complex128, requires_grad=True)"),
    "complex_input_wrong": ("return x.real * 3", "return torch.complex(g * 2, torch.zeros_like(g))", "torch.randn(3, device=device, dtype=torch.complex128, requires_grad=True)"),
}


def _gradcheck_verdict(forward: str, backward: str, inputs: str) -> bool:
    scope: dict = {}
    exec(fn_source(forward, backward, inputs), scope)  # the same source the CLI reads
    args = scope["example_inputs"]("cpu", torch.float64)
    return gradcheck_passes(scope["F"].apply, args)


@pytest.mark.parametrize("case", CASES)
def test_the_cli_gives_gradchecks_verdict_on_complex_functions(cli, write_source, case):
    forward, backward, inputs = CASES[case]
    expected = _gradcheck_verdict(forward, backward, inputs)
    out = cli("check", str(write_source(fn_source(forward, backward, inputs))), "--json")
    data = json.loads(out.stdout)
    assert out.returncode == (0 if expected else 1), out.stderr
    assert data["passed"] is expected
    assert any("view_as_real" in note for note in data["notes"])


def test_both_verdicts_occur():
    assert {_gradcheck_verdict(*c) for c in CASES.values()} == {True, False}


def test_a_complex_function_sweeps(cli, write_source):
    forward, backward, inputs = CASES["complex_input_wrong"]
    out = cli("sweep", str(write_source(fn_source(forward, backward, inputs))), "--json")
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["verdict"] == "backward_wrong"
