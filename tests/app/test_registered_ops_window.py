"""Operators registered with ``torch.library.Library`` + ``register_autograd`` (no global holds
them, no decorator names them) in the window: the live scan cannot see them, the worker's list
after a run names them by ``ns::name``, and choosing one checks it."""

from __future__ import annotations

import shutil

from gradviz.app.function_list import scan_function_names
from tests.app.test_documents import opened
from tests.app.test_main_window import run_and_wait
from tests.paths import CORPUS

SOURCE = CORPUS / "library_op.py"


def test_window_lists_the_registered_operator_after_a_run(qtbot, main_window, tmp_path):
    window = main_window
    path = tmp_path / "library_op.py"
    shutil.copy(SOURCE, path)  # the worker runs the file in a process of its own: registered there
    assert scan_function_names(path.read_text(encoding="utf-8")) == []  # nothing to see without running it
    opened(qtbot, window, path)
    run_and_wait(qtbot, window)
    result = window.current.result
    assert result.function == "gvcorpus_lib::scale" and result.passed
    assert [i.name for i in result.inputs] == ["x", "alpha"]  # named by the schema
    items = [window.picker.functions.itemText(k) for k in range(window.picker.functions.count())]
    assert items == ["gvcorpus_lib::scale"]
