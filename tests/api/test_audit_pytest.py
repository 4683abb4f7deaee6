"""assert_model_gradients in a real test suite (pytest in a subprocess): the failure names every
failing node with its worst cells, and ``--gradviz-artifacts`` leaves the audit and a reproducer
per failing node that exits with gradcheck's verdict on that node."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from gradviz.testing import ModelGradientMismatch, assert_model_gradients
from tests.api.test_pytest_plugin import plugin_option
from tests.core import audit_models
from tests.core.audit_oracle import record_calls
from tests.paths import ROOT

SUITE = """
import torch
from gradviz.testing import assert_model_gradients
from tests.core import audit_models


def test_capped_model():
    torch.manual_seed(1)
    assert_model_gradients(audit_models.capped_twin(), *audit_models.example_inputs("cpu", torch.float64))


def test_correct_model():
    torch.manual_seed(1)
    assert_model_gradients(audit_models.transformer(), *audit_models.example_inputs("cpu", torch.float64))
"""


def _x() -> torch.Tensor:
    torch.manual_seed(1)
    return audit_models.example_inputs("cpu", torch.float64)[0]


def test_message_names_every_failing_node_with_gradchecks_worst_cell():
    model = audit_models.TwoNorms()
    with pytest.raises(ModelGradientMismatch) as caught:
        assert_model_gradients(model, _x())
    failing = [c for c in record_calls(model, _x()) if not c.gradcheck()]
    assert len(failing) == 1
    message = str(caught.value)
    assert "rest → BadRMSNormFn, call 2 of 2: out0[" in message and "first →" not in message
    worst = caught.value.report.nodes[1].report.failing_cells[0]
    # the true derivative there, from the correct twin's backward
    true = torch.autograd.functional.jacobian(
        lambda w: audit_models.RMSNormFn.apply(failing[0].args[0], w, 1e-6), failing[0].args[1]
    )
    assert f"{worst.label} analytic {worst.analytic:.6g}" in message
    assert abs(worst.numerical - true.reshape(-1, 8)[worst.row, worst.col].item()) < 1e-6
    assert assert_model_gradients(audit_models.transformer(), _x()).passed


def test_suite_failure_and_artifacts(tmp_path):
    (tmp_path / "test_models.py").write_text(textwrap.dedent(SUITE))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugin_option(), "--gradviz-artifacts", "art"]
    out = subprocess.run([*args, "test_models.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 failed, 1 passed" in out.stdout
    assert "gradviz.ModelGradientMismatch: FAILED: TinyTransformer, 1 of 11" in out.stdout
    assert "head.act → BadLeakyCapFn, call 2 of 2: out0[" in out.stdout
    (folder,) = (tmp_path / "art").iterdir()
    assert (folder / "audit.json").is_file()
    (script,) = folder.glob("*/reproducer.py")
    run = subprocess.run([sys.executable, str(script)], cwd="/", env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "gradcheck FAILED" in run.stdout
