"""An exception raised inside the user's ``jvp`` is the user's error at that line, as for backward:
``gradviz.UserCodeError`` from the API, exit 2 with the line from the CLI, never a gradient FAIL.
gradcheck(check_forward_ad=True) raises the same exception there (asked here, not assumed)."""

from __future__ import annotations

import json

import pytest
import torch

import gradviz
from tests.cli.runner import gradviz as run_cli
from tests.real_world.oracle import load_module

# setup_context saves for backward only: the jvp's ``ctx.saved_tensors`` is empty and unpacking it raises
FORGOT_SAVE_FOR_FORWARD = '''
import torch


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y = inputs
        ctx.save_for_backward(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x

    @staticmethod
    def jvp(ctx, x_t, y_t):
        x, y = ctx.saved_tensors
        return x_t * y + y_t * x


def example_inputs(device, dtype):
    return tuple(torch.randn(3, device=device, dtype=dtype, requires_grad=True) for _ in range(2))
'''
JVP_LINE = 21  # ``x, y = ctx.saved_tensors`` in jvp


def _inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return tuple(torch.randn(3, dtype=torch.float64, requires_grad=True) for _ in range(2))


@pytest.fixture
def source(write_source):
    path = write_source(FORGOT_SAVE_FOR_FORWARD)
    assert "x, y = ctx.saved_tensors" in path.read_text(encoding="utf-8").splitlines()[JVP_LINE - 1]
    return path


@pytest.mark.parametrize("backward_ad", [True, False], ids=["with_backward", "forward_only"])
def test_the_api_raises_the_users_error_at_the_jvps_line(source, backward_ad):
    mul = load_module(source).Mul
    with pytest.raises(ValueError, match="not enough values to unpack"):  # what gradcheck does
        torch.autograd.gradcheck(mul.apply, _inputs(), check_forward_ad=True, check_backward_ad=backward_ad)
    assert gradviz.check(mul, _inputs()).passed  # the backward alone is right
    with pytest.raises(gradviz.UserCodeError) as caught:
        gradviz.check(mul, _inputs(), check_forward_ad=True, check_backward_ad=backward_ad, raise_exception=False)
    error = caught.value
    assert isinstance(error, gradviz.GradvizError)
    assert error.kind == "forward"
    assert error.message.startswith("Mul.jvp raised ValueError: not enough values to unpack")
    assert (error.filename, error.lineno) == (str(source), JVP_LINE)
    assert isinstance(error.__cause__, ValueError)


def test_the_cli_exits_2_naming_the_jvps_line(source):
    out = run_cli("check", str(source), "--forward-ad", "--json")
    assert out.returncode == 2, out.stdout + out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["kind"] == "forward"
    assert "Mul.jvp raised ValueError" in error["message"]
    assert (error["filename"], error["lineno"]) == (str(source), JVP_LINE)
    assert f"line {JVP_LINE}" in out.stderr and "FAILED" not in out.stdout + out.stderr
