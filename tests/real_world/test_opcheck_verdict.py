"""A custom op with a right backward and a wrong registration (no fake kernel, a wrong one):
gradviz's verdict is gradcheck's, and opcheck's findings are warned registration checks beside it,
saying what breaks and how to fix it. ``opcheck="fail"`` / ``--opcheck fail`` makes them count.

The oracles are computed here: ``torch.autograd.gradcheck`` on the op for the verdict, and
``torch.library.opcheck`` for which tests fail.
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
from gradviz.core.opcheck_checks import OPCHECK_TESTS
from gradviz.schema.report import verdict_line
from gradviz.schema.results import FAILED, PASSED, WARNED

from . import registration_ops as reg

FILE = Path(reg.__file__)


def _inputs() -> tuple[torch.Tensor]:
    return reg.example_inputs(torch.device("cpu"), torch.float64)


def _gradcheck(op, args) -> bool:
    return torch.autograd.gradcheck(op, args, raise_exception=False)


def _opcheck_failures(op, args) -> set[str]:
    call = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = torch.library.opcheck(op, call, raise_exception=False)
    return {test for test, value in found.items() if value != "SUCCESS"}


@pytest.mark.parametrize("name", reg.OPS)
def test_api_verdict_is_gradchecks_and_opcheck_is_warned_beside_it(name):
    op, args = getattr(reg, name), _inputs()
    expected = _gradcheck(op, args)
    failing = _opcheck_failures(op, args)
    assert expected and "test_faketensor" in failing  # the ops are what they say: right gradient, wrong registration
    report = gradviz.check(op, args)  # raise_exception=True: gradcheck passes, so no GradientMismatch
    assert report.passed == expected
    outcomes = {c.name: c for c in report.result.checks}
    for test, check_name in OPCHECK_TESTS.items():
        assert outcomes[check_name].status == (WARNED if test in failing else PASSED), outcomes[check_name]
    fake = outcomes["opcheck_faketensor"].detail
    assert "torch.compile" in fake and f"@{name}.register_fake" in fake and "verdict is unchanged" in fake
    assert "warned (not part of gradcheck's verdict): opcheck_faketensor" in verdict_line(report.result)
    last = str(report).splitlines()[-1]
    assert last.startswith("PASSED; warned (not part of gradcheck's verdict): ") and "opcheck_faketensor" in last


def test_no_fake_kernel_is_told_to_add_one():
    report = gradviz.check(reg.square_no_fake, _inputs())
    detail = next(c.detail for c in report.result.checks if c.name == "opcheck_faketensor")
    assert "Fix: add a fake kernel with @square_no_fake.register_fake" in detail
    assert "\n" not in detail


@pytest.mark.parametrize("name", reg.OPS)
def test_opcheck_fail_makes_the_findings_count(name):
    op, args = getattr(reg, name), _inputs()
    failing = _opcheck_failures(op, args)
    with pytest.raises(gradviz.GradientMismatch) as caught:
        gradviz.check(op, args, opcheck="fail")
    report = caught.value.report
    assert not report.passed and all(b.passed for b in report.result.blocks)  # the gradient itself is right
    failed = {c.name for c in report.result.checks if c.status == FAILED}
    assert failed == {OPCHECK_TESTS[t] for t in failing}
    assert "Failed check opcheck_faketensor" in str(caught.value)
    assert "opcheck=\"fail\"" in next(c.detail for c in report.result.checks if c.name == "opcheck_faketensor")


@pytest.mark.slow  # three CLI runs, each tracing the op through AOT dispatch (~10 s)
def test_cli_exit_code_is_gradchecks_and_json_names_the_warned_checks(cli, tmp_path):
    args = _inputs()
    expected = _gradcheck(reg.square_no_fake, args)
    failing = _opcheck_failures(reg.square_no_fake, args)
    run = cli("check", str(FILE), "--function", "square_no_fake", "--json", cwd=tmp_path)  # schema-checked
    payload = json.loads(run.stdout)
    assert run.returncode == (0 if expected else 1) == 0, run.stderr[-2000:]
    assert payload["passed"] == expected and payload["settings"]["opcheck"] == "warn"
    statuses = {c["name"]: c["status"] for c in payload["checks"]}
    assert {n for n, s in statuses.items() if s == "warned"} == {OPCHECK_TESTS[t] for t in failing}

    text = cli("check", str(FILE), "--function", "square_no_fake", cwd=tmp_path)
    assert text.returncode == 0, text.stderr[-2000:]
    assert "PASSED; warned (not part of gradcheck's verdict): opcheck_faketensor" in text.stdout
    assert "@square_no_fake.register_fake" in text.stdout

    counted = cli("check", str(FILE), "--function", "square_wrong_fake", "--opcheck", "fail", "--json", cwd=tmp_path)
    payload = json.loads(counted.stdout)
    assert counted.returncode == 1 and not payload["passed"] and payload["settings"]["opcheck"] == "fail"
    assert {c["name"] for c in payload["checks"] if c["status"] == "failed"} == {
        OPCHECK_TESTS[t] for t in _opcheck_failures(reg.square_wrong_fake, args)
    }


@pytest.mark.slow  # the script runs opcheck in a fresh process (~10 s)
@pytest.mark.parametrize("mode", ["warn", "fail"])
def test_reproducer_exits_as_the_verdict_in_either_mode(mode, tmp_path):
    """The script runs gradcheck, then opcheck's tests: their failures print as warnings and exit 0
    unless opcheck="fail" made them part of the verdict."""
    args = _inputs()
    report = gradviz.check(reg.square_wrong_fake, args, opcheck=mode, raise_exception=False)
    script = tmp_path / "repro.py"
    script.write_text(report.reproducer())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == (0 if report.passed else 1), run.stdout[-1000:] + run.stderr[-2000:]
    assert report.passed == (_gradcheck(reg.square_wrong_fake, args) and mode == "warn")
    label = "WARNED" if mode == "warn" else "FAILED"
    printed = {line.split(":")[1].strip() for line in run.stdout.splitlines() if line.startswith(f"opcheck {label}")}
    assert printed == _opcheck_failures(reg.square_wrong_fake, args)
