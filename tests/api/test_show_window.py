"""report.show() opens the real window on the same Function and inputs: pytest-qt reads the
Jacobians back from it. The window opens targets through ``MainWindow.open_target(target,
inputs_path, settings)``."""

from __future__ import annotations

import os

if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np

import gradviz
from gradviz.api.window import prepare_launch
from gradviz.app.launch import open_requested, parse_app_args, refuse_arguments
from tests.api import functions as f
from tests.app.conftest import main_window, settings_store  # noqa: F401 (fixtures, fetched by name below)


def test_report_show_opens_the_window_on_the_same_jacobians(request, qtbot, tmp_path):
    report = gradviz.check(f.WrongSign, f.inputs(seed=5), raise_exception=False)
    launch = prepare_launch(report.fn, report.inputs, report.result.settings, tmp_path)  # what show() starts
    assert launch.command[1:5] == ["-P", "-m", "gradviz", "app"]  # -P: no current folder on its sys.path
    args = parse_app_args(launch.command[5:])
    assert refuse_arguments(args) is None
    window = request.getfixturevalue("main_window")
    with qtbot.waitSignal(window.result_shown, timeout=120_000):
        assert open_requested(window, args)
    view = window.current.result
    assert view.function == "WrongSign" and view.passed is False
    assert sorted((b.output, b.input) for b in view.blocks) == sorted(report.analytic)
    for block in view.blocks:
        np.testing.assert_array_equal(block.analytic, report.analytic[block.output, block.input])
        np.testing.assert_array_equal(block.numerical, report.numerical[block.output, block.input])
        np.testing.assert_array_equal(block.failing, report.failing[block.output, block.input])


def test_gradviz_file_py_opens_the_file_in_the_real_window_without_running_it(request, qtbot, tmp_path):
    path = tmp_path / "ops.py"
    path.write_text("import torch\n\n# a Function comes here\n", encoding="utf-8")
    window = request.getfixturevalue("main_window")
    request_before = window.controller.current_check
    assert open_requested(window, parse_app_args([str(path)]))
    # the file is read off the GUI thread: the editor shows it a moment later
    qtbot.waitUntil(lambda: window.editor.text() == path.read_text(encoding="utf-8"), timeout=10_000)
    assert window.document.path == path and window.controller.current_check == request_before  # nothing ran
