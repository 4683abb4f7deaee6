"""report.show() / gradviz.show(): the files and the command line the window is started with, and
that the worker's side rebuilds the very same check from them (no window needed here; the real
window is driven in test_show_window.py)."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest
import torch

import gradviz
from gradviz.api import window as show_module
from gradviz.api.window import prepare_launch
from gradviz.core.check import check_source
from gradviz.core.loader import load_source, load_target
from gradviz.schema.settings import CheckSettings
from tests.api import functions as f
from tests.paths import ROOT

NOTEBOOK_CELL = """
import torch

class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 2.01 * grad
"""


STARTED: list = []  # what FakePopen was asked to start


class FakePopen:
    """Records how the window's process would be started."""

    def __init__(self, command, **kwargs):
        STARTED.append((command, kwargs))


def rebuilt(launch):
    """What the worker does with the window's request: load target and inputs, check."""
    settings = CheckSettings.from_dict(json.loads(launch.settings_path.read_text()))
    return check_source(load_target(launch.target, inputs_path=launch.inputs_path), settings=settings)


def test_an_importable_function_travels_as_its_import_path(tmp_path):
    report = gradviz.check(f.WrongSign, f.inputs(seed=4), eps=1e-5, raise_exception=False)
    launch = prepare_launch(report.fn, report.inputs, report.result.settings, tmp_path)
    assert launch.target == "tests.api.functions:WrongSign" and str(ROOT) in launch.env["PYTHONPATH"].split(
        ":"
    )
    assert launch.command == [
        sys.executable, "-P", "-m", "gradviz", "app", "--target", launch.target,
        "--inputs", str(tmp_path / "inputs.pt"), "--settings", str(tmp_path / "settings.json"),
    ]  # fmt: skip
    saved = torch.load(launch.inputs_path, weights_only=True)
    for a, b in zip(saved, f.inputs(seed=4)):
        assert torch.equal(a, b) and a.requires_grad == b.requires_grad
    assert CheckSettings.from_dict(json.loads(launch.settings_path.read_text())) == report.result.settings
    again = rebuilt(launch)
    assert again.function == "WrongSign" and again.passed == report.passed
    for block in again.blocks:
        np.testing.assert_array_equal(block.analytic, report.analytic[block.output, block.input])
        np.testing.assert_array_equal(block.numerical, report.numerical[block.output, block.input])


def test_a_notebook_function_travels_as_a_source_file(tmp_path):
    twice = load_source(textwrap.dedent(NOTEBOOK_CELL), "<cell>").functions["Twice"]
    x = torch.randn(4, 2, dtype=torch.float32, requires_grad=True)
    report = gradviz.check(twice, x, raise_exception=False)
    launch = prepare_launch(report.fn, report.inputs, report.result.settings, tmp_path)
    assert launch.target == f"{tmp_path / 'checked_function.py'}:Twice"
    again = rebuilt(launch)
    assert again.dtype == "float32" and not again.passed and not report.passed
    np.testing.assert_array_equal(again.blocks[0].analytic, report.blocks[0].analytic)
    np.testing.assert_array_equal(again.blocks[0].numerical, report.blocks[0].numerical)


def test_without_a_display_it_says_so_in_one_line(monkeypatch, capsys):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(show_module.subprocess, "Popen", FakePopen)
    STARTED.clear()
    report = gradviz.check(f.Product, f.inputs())
    assert report.show() is None and gradviz.show(f.Product, f.inputs()) is None
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert "no display" in lines[0] and "notebook" in lines[0] and "gradviz check" in lines[0]
    assert STARTED == []


def test_with_a_display_the_window_process_is_started(monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setattr(show_module.subprocess, "Popen", FakePopen)
    STARTED.clear()
    gradviz.show(f.scaled_product, f.inputs(), atol=1e-4)
    [(command, kwargs)] = STARTED
    assert command[command.index("--target") + 1] == "tests.api.functions:scaled_product"
    settings = json.loads(open(command[command.index("--settings") + 1]).read())
    assert settings["atol"] == 1e-4 and kwargs["start_new_session"] is True


def test_inputs_that_weights_only_loading_refuses_are_refused_before_launching(tmp_path):
    class Config:
        scale = 2.0

    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="cannot travel to the window"):
        prepare_launch(
            lambda x, config: f.Product.apply(x, x) * config.scale, (x, Config()), CheckSettings(), tmp_path
        )
    assert not (tmp_path / "inputs.pt").exists()
