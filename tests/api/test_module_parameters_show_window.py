"""``gradviz.show`` / ``report.show()`` on a module checked with its parameters: the real window
opens the rebuilt module and shows the API's Jacobians, blocks named by parameter (pytest-qt
reads them back). The window opens targets through ``MainWindow.open_target``."""

from __future__ import annotations

import os

if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np
import torch

import gradviz
from gradviz.api.window import prepare_launch
from gradviz.app.launch import open_requested, parse_app_args, refuse_arguments
from tests.api import parameters_modules as pm
from tests.app.conftest import main_window, settings_store  # noqa: F401 (fixtures, fetched by name below)


def test_report_show_of_a_module_with_parameters_opens_the_same_jacobians(
    request, qtbot, tmp_path, monkeypatch
):
    torch.manual_seed(0)
    module = pm.WrongWeightNet().double()
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    report = gradviz.check(module, x, parameters=True, raise_exception=False)
    launch = prepare_launch(report.fn, report.inputs, report.result.settings, tmp_path)  # what show() starts
    args = parse_app_args(launch.command[5:])
    assert refuse_arguments(args) is None
    monkeypatch.setenv(
        "PYTHONPATH", launch.env["PYTHONPATH"]
    )  # the window's worker gets what show() gives it
    window = request.getfixturevalue("main_window")
    with qtbot.waitSignal(window.result_shown, timeout=120_000):
        assert open_requested(window, args)
    view = window.current.result
    assert view.passed is report.passed is False
    assert [i.name for i in view.inputs] == ["x", "layer.weight", "layer.bias"]
    for block in view.blocks:
        np.testing.assert_array_equal(block.analytic, report.analytic[block.output, block.input])
        np.testing.assert_array_equal(block.numerical, report.numerical[block.output, block.input])
