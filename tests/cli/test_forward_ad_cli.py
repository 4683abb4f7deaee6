"""``gradviz check FILE --forward-ad [--batched-forward-grad] [--no-backward-ad]``: the real command
line through the worker on ``tests/real_world/jvp_functions.py``; the verdict is
``torch.autograd.gradcheck(..., check_forward_ad=True, ...)``'s, computed here on the same inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import gradviz
from gradviz.schema.settings import CheckSettings
from tests.core.test_forward_ad import gradcheck_verdict
from tests.real_world import jvp_functions as jf

SOURCE = Path(jf.__file__)


def _inputs():
    """The inputs the CLI checks at: the file's example_inputs under the check's seed."""
    torch.manual_seed(CheckSettings().seed)
    return jf.example_inputs()


@pytest.mark.parametrize(
    ("function", "flags", "options"),
    [
        ("SinWrongJvp", [], {}),
        ("SinWrongJvp", ["--forward-ad"], {"check_forward_ad": True}),
        (
            "SinRightJvpWrongBackward",
            ["--forward-ad", "--no-backward-ad"],
            {"check_forward_ad": True, "check_backward_ad": False},
        ),
        (
            "NumpyJvp",
            ["--forward-ad", "--batched-forward-grad"],
            {"check_forward_ad": True, "check_batched_forward_grad": True},
        ),
    ],
    ids=["wrong_jvp_default", "wrong_jvp_forward", "forward_only", "batched_forward"],
)
def test_exit_code_and_json_give_gradchecks_verdict(cli, function, flags, options):
    expected = gradcheck_verdict(getattr(jf, function), _inputs(), **options)
    out = cli("check", str(SOURCE), "--function", function, "--json", *flags)
    assert out.returncode == (0 if expected else 1), out.stderr
    data = json.loads(out.stdout)  # validated against the shipped schema by the runner
    assert data["passed"] == expected
    assert bool(data["forward_blocks"]) == ("--forward-ad" in flags)
    if "--batched-forward-grad" in flags:
        assert [c["passed"] for c in data["checks"] if c["name"] == "batched_forward_grad"] == [False]
    if "--no-backward-ad" in flags:
        assert data["blocks"] == []


def test_table_shows_forward_blocks_and_save_writes_them(cli, tmp_path):
    out = cli("check", str(SOURCE), "--function", "SinWrongJvp", "--forward-ad", "--save", str(tmp_path))
    assert out.returncode == 1, out.stderr
    assert "forward mode (jvp / forward AD) against numerical" in out.stdout
    assert "forward-mode cells outside tolerance" in out.stdout
    saved = np.load(tmp_path / "forward_o0_i0.npy", allow_pickle=False)
    api = gradviz.check(jf.SinWrongJvp, _inputs(), check_forward_ad=True, raise_exception=False)
    np.testing.assert_array_equal(saved, api.forward[0, 0])  # the same inputs: the file's, under the seed


def test_a_function_without_jvp_is_one_clear_line_not_a_traceback(cli):
    out = cli("check", str(SOURCE), "--function", "SinNoJvp", "--forward-ad")
    assert out.returncode == 1
    assert "SinNoJvp has no jvp" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_batched_forward_grad_without_forward_ad_is_refused_as_gradcheck_refuses(cli):
    with pytest.raises(AssertionError):
        torch.autograd.gradcheck(jf.SinJvp.apply, _inputs(), check_batched_forward_grad=True)
    out = cli("check", str(SOURCE), "--function", "SinJvp", "--batched-forward-grad")
    assert out.returncode == 2
    assert "requires check_forward_ad" in out.stdout + out.stderr
