"""The bad-input corpus (tests/corpus) through the real window and its worker.

For each case: a clear message naming the problem (and the line, where there is one), the
window alive, the editor text unchanged, and, after a case that ends the worker, a next run
that works.
"""

from __future__ import annotations

import json

import pytest
import torch
from PySide6.QtCore import Qt

from gradviz.app.panels import output_panel
from gradviz.schema.library import find_builtin
from tests.paths import CORPUS

CASES = [
    c
    for c in json.loads((CORPUS / "index.json").read_text(encoding="utf-8"))["cases"]
    if c["file"] != "not_utf8.py" and (not c.get("cuda") or torch.cuda.is_available())
]
RUN_TIMEOUT = 60_000
ENDS_RUN = {"crashed", "timeout"}  # the run's process ends; the worker serves on


def run(qtbot, window) -> tuple[str, str]:
    """Press Run and wait for whichever comes: a drawn result or a failure."""
    outcome = {}
    window.result_shown.connect(lambda: outcome.setdefault("how", ("result", "")))
    window.run_failed.connect(lambda message: outcome.setdefault("how", ("failed", message)))
    qtbot.mouseClick(window.run_bar.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "how" in outcome, timeout=RUN_TIMEOUT)
    return outcome["how"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"].removesuffix(".py"))
def test_bad_input_in_the_window(qtbot, main_window, case):
    window = main_window
    text = (CORPUS / case["file"]).read_text(encoding="utf-8")
    window.editor.set_text(text)
    worker = window.worker.pid
    if case.get("kind") == "timeout":
        window.run_bar.timeout.setValue(2)  # the worker stops the endless loop after 2 s
    how, message = run(qtbot, window)
    assert window.editor.text() == text and window.isVisible()
    if case["exit"] == 2:
        assert how == "failed"
        assert window.banner.state == "error"
        if case.get("line"):  # a timeout or a crash names the line and marks it, like any error
            assert window.editor.editor.error_line == case["line"]
        if case.get("kind") != "timeout":
            assert case["message"] in window.editor.message.text() or case["message"] in message
        if case.get("kind") == "timeout":
            assert "did not finish within 2 s" in message
        elif case.get("kind") == "crashed":
            assert "ended the process" in message
    else:
        assert how == "result"
        assert window.current.result.passed == (case["exit"] == 0)
        if case.get("message"):
            shown = " ".join([*window.current.result.warnings, *window.current.result.notes, window.banner.details.text()])
            shown += " ".join(h for b in window.current.result.blocks for h in b.hints)
            assert case["message"] in shown
    if case.get("kind") in ENDS_RUN:  # the same worker serves on: the next run must work
        assert window.worker.pid == worker
        window.run_bar.timeout.setValue(0)  # the 2 s limit was for the endless loop, not this example
        window.editor.set_text(find_builtin("linear").read_text(encoding="utf-8"))
        assert run(qtbot, window)[0] == "result" and window.current.result.passed


def test_print_flood_is_shown_truncated_and_the_window_stays_responsive(qtbot, main_window):
    window = main_window
    window.editor.set_text((CORPUS / "print_flood.py").read_text(encoding="utf-8"))
    assert run(qtbot, window)[0] == "result"
    qtbot.waitUntil(lambda: "characters not shown" in window.output.shown_text(), timeout=10_000)
    assert len(window.output.shown_text()) <= output_panel.MAX_SHOWN
    assert window.output.received > 1_000_000


def test_not_utf8_file_is_refused_with_a_message(qtbot, main_window, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window = main_window
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: shown.append(a[2]))
    before = window.editor.text()
    with qtbot.waitSignal(window.source.refused, timeout=10_000):  # read off the GUI thread
        window.open_file(CORPUS / "not_utf8.py")
    assert shown and "not UTF-8" in shown[0]
    assert window.editor.text() == before


def test_cuda_without_cuda_is_refused_in_the_run_bar(main_window):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    combo = main_window.run_bar.device
    k = combo.findData("cuda")
    assert k >= 0 and not combo.model().item(k).isEnabled()
