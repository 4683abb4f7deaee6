"""``gradviz check --sweep`` and ``gradviz sweep``: the slopes and the verdict, as text and as JSON."""

from __future__ import annotations

import json

from tests.sources import SQUARE

CUBE = SQUARE.replace("return x * x", "return x * x * x").replace("return 2 * x * g", "return 3 * x * x * g")


def test_check_with_sweep_adds_slopes_and_verdict_to_table_and_json(cli):
    out = cli("check", "buggy_square_factor", "--sweep")
    assert out.returncode == 1, out.stderr
    assert "sweep: remainder slope 1.00" in out.stdout and "backward wrong" in out.stdout
    data = json.loads(cli("check", "buggy_square_factor", "--sweep", "--json").stdout)
    assert data["passed"] is False
    assert data["sweep"]["verdict"] == "backward_wrong"
    block = data["blocks"][0]["sweep"]
    assert block["verdict"] == "backward_wrong" and abs(block["remainder_slope"] - 1) < 0.1


def test_check_without_sweep_has_none(cli):
    data = json.loads(cli("check", "linear", "--json").stdout)
    assert data["sweep"] is None and data["blocks"][0]["sweep"] is None and data["precision"] is None


def test_sweep_prints_curves_and_the_eps_to_use(cli, write_source):
    out = cli("sweep", str(write_source(CUBE)), "--dtype", "float32", "--eps", "1e-6")
    assert out.returncode == 0, out.stderr
    assert "remainder" in out.stdout and "max |n-a|" in out.stdout
    assert "EPS TOO SMALL" in out.stdout and "Suggested eps" in out.stdout
    data = json.loads(cli("sweep", str(write_source(CUBE)), "--dtype", "float32", "--eps", "1e-6", "--json").stdout)
    assert data["verdict"] == "eps_too_small" and data["best_eps"] > 1e-5
    assert len(data["steps"]) == len(data["blocks"][0]["errors"]) == len(data["blocks"][0]["remainder"])


def test_sweep_one_block(cli):
    data = json.loads(cli("sweep", "buggy_linear_bias_axis", "--block", "0,2", "--json").stdout)
    swept = [b for b in data["blocks"] if b["errors"] is not None]
    assert [(b["output"], b["input"]) for b in swept] == [(0, 2)]
    assert data["verdict"] == "backward_wrong"


def test_bad_block_exits_two_before_running(cli):
    out = cli("sweep", "linear", "--block", "zero")
    assert out.returncode == 2 and "output,input" in out.stderr
    out = cli("sweep", "linear", "--block", "0,5")
    assert out.returncode == 2 and "0,0 (out0 / input)" in out.stderr


def test_each_dtype_gets_its_own_defaults(cli):
    out = cli("check", "linear", "--dtype", "float32")
    assert out.returncode == 0, out.stdout
    assert "(eps=0.003, atol=0.002, rtol=0.002)" in out.stdout
    out = cli("check", "linear", "--dtype", "float32", "--eps", "1e-6", "--atol", "1e-5", "--rtol", "1e-3")
    assert out.returncode == 1 and "Fails only in float32" in out.stdout
