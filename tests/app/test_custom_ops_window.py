"""Custom ops in the window: a file of custom ops lists them by ``ns::name`` (the live scan
of the text, and the worker's list after a run), and a run checks the chosen op."""

from __future__ import annotations

import shutil

from gradviz.app.function_list import scan_function_names
from gradviz.schema.library import function_names
from tests.app.test_documents import opened
from tests.app.test_main_window import run_and_wait
from tests.paths import TESTS

COLLECTION = TESTS / "real_world" / "custom_ops_collection.py"
OPS = ["cube", "cube_wrong_backward", "cube_wrong_fake", "cube_wrong_schema", "affine"]
NAMES = [f"gvtest_cop::{n}" for n in OPS]


def test_the_scan_lists_custom_ops_as_the_ast_rule_does():
    text = COLLECTION.read_text(encoding="utf-8")
    assert scan_function_names(text) == function_names(text) == NAMES
    mixed = "import torch\nclass F(torch.autograd.Function):\n    pass\n\n" + text
    assert scan_function_names(mixed) == function_names(mixed) == ["F", *NAMES]


def test_window_lists_the_ops_and_checks_the_chosen_one(qtbot, main_window, tmp_path):
    window = main_window
    path = tmp_path / "cops.py"
    shutil.copy(COLLECTION, path)  # the worker runs the file in its own process: registered once there
    opened(qtbot, window, path)
    items = lambda: [window.picker.functions.itemText(k) for k in range(window.picker.functions.count())]  # noqa: E731
    qtbot.waitUntil(lambda: items() == NAMES, timeout=10_000)  # the live scan, before any run
    run_and_wait(qtbot, window)
    result = window.current.result
    assert result.function == "gvtest_cop::cube_wrong_backward"  # the file's FUNCTION
    assert not result.passed and [i.name for i in result.inputs] == ["x"]
    assert sorted(items()) == sorted(NAMES)  # the worker's list
    assert {c.name for c in result.checks} >= {"opcheck_schema", "opcheck_faketensor"}
