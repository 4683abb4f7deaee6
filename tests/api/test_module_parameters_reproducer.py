"""``gradviz.check(module, x, parameters=...)``: ``report.reproducer()`` / ``report.save`` write a
script that rebuilds the module (its class imported, its state as literals) and reproduces the
verdict with torch.autograd.gradcheck in a subprocess; ``gradviz.show`` opens the window on the
same check. The oracle is gradcheck over ``torch.func.functional_call``, computed here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.api.literals import NotWritable
from gradviz.api.window import prepare_launch
from tests.api import parameters_modules as pm
from tests.paths import ROOT
from tests.real_world.oracle import module_gradcheck_passes


def make(cls):
    torch.manual_seed(0)
    module = cls().double()
    module.eval()  # dropout off: a deterministic forward
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    return module, x


def run_script(script: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # torch only; the class found from cwd
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    ("cls", "parameters"),
    [(pm.TanhNet, True), (pm.WrongWeightNet, True), (pm.WrongWeightNet, ["layer.bias"])],
    ids=["right", "wrong-weight", "bias-only"],
)
def test_reproducer_rebuilds_the_module_and_gives_gradchecks_verdict(cls, parameters, tmp_path):
    module, x = make(cls)
    report = gradviz.check(module, x, parameters=parameters, raise_exception=False)
    names = [n for n, _ in module.named_parameters()] if parameters is True else parameters
    verdict = module_gradcheck_passes(module, x, names)
    assert report.passed == verdict
    written = report.save(tmp_path / "report")
    script = tmp_path / "report" / "reproducer.py"
    assert script in written, (tmp_path / "report" / "reproducer.txt").read_text()
    run = run_script(script, ROOT)
    assert run.returncode == (0 if verdict else 1), run.stdout + run.stderr
    assert ("gradcheck passed" if verdict else "gradcheck FAILED") in run.stdout
    text = report.reproducer()  # the text alone runs too: the state is in it
    (tmp_path / "alone.py").write_text(text)
    assert run_script(tmp_path / "alone.py", ROOT).returncode == (0 if verdict else 1)
    assert f"parameter_names = {names!r}" in text and "from tests.api.parameters_modules import" in text


def test_reproducer_keeps_the_state_and_train_flags(tmp_path):
    """A buffer and a changed weight come from the state written, not from a fresh __init__."""
    module, x = make(pm.TanhNet)
    with torch.no_grad():
        module.scale.fill_(2.5)
        module.layer.weight.mul_(3)
    report = gradviz.check(module, x, parameters=True, raise_exception=False)
    text = report.reproducer()
    probe = text.replace(
        "\ntry:\n    torch.autograd.gradcheck",
        "\nprint(repr(fn(*inputs).tolist()))\ntry:\n    torch.autograd.gradcheck",
        1,
    )
    (tmp_path / "probe.py").write_text(probe)
    run = run_script(tmp_path / "probe.py", ROOT)
    printed = run.stdout.splitlines()[0]
    assert printed == repr(module(x).tolist()), run.stderr  # the same forward, bit for bit
    assert "module.train(False)" in text


def test_a_class_that_needs_arguments_is_refused_by_name():
    torch.manual_seed(0)
    module = pm.NeedsWidth(3).double().eval()
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    report = gradviz.check(module, x, parameters=True, raise_exception=False)
    with pytest.raises(NotWritable, match=r"NeedsWidth.__init__ takes arguments \(width\).*--parameters"):
        report.reproducer()


def test_show_opens_the_same_check_in_the_windows_worker(tmp_path):
    """What show() starts: the window's worker loads the target written and checks it; the same
    blocks (named by parameter) and verdict as the API's. Run as the CLI runs the worker."""
    module, x = make(pm.WrongWeightNet)
    report = gradviz.check(module, x, parameters=True, raise_exception=False)
    launch = prepare_launch(report.fn, report.inputs, report.result.settings, tmp_path / "show")
    env = {**launch.env}
    target = launch.target
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", target, "--inputs", str(launch.inputs_path), "--json"],
        cwd=launch.cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    data = json.loads(out.stdout)
    assert data["passed"] == report.passed == module_gradcheck_passes(module, x, ["layer.weight", "layer.bias"])
    assert (
        [i["name"] for i in data["inputs"]]
        == [i.name for i in report.result.inputs]
        == ["x", "layer.weight", "layer.bias"]
    )


def test_gradviz_show_takes_parameters(monkeypatch, tmp_path):
    """gradviz.show(module, x, parameters=...) reaches the window with the module's check, not an error."""
    module, x = make(pm.TanhNet)
    started = {}

    def fake_show(fn, inputs, settings):
        started["launch"] = prepare_launch(fn, inputs, settings, tmp_path)
        return None

    monkeypatch.setattr("gradviz.api.window.show_in_window", fake_show)
    gradviz.show(module, x, parameters=["layer.weight"])
    launch = started["launch"]
    assert launch.target.endswith(":TanhNet_with_parameters")
    assert len(torch.load(launch.inputs_path, weights_only=True)) == 2  # x and layer.weight
