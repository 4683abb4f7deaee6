"""Many runs in one window (edit, run, cancel mixed): nothing piles up."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.app.resources_usage import snapshot
from tests.app.test_main_window import HANG, RUN_TIMEOUT

RUNS = 24  # bench/soak.py does 100; this keeps CI short


def one_round(qtbot, window, k: int, original: str) -> None:
    """Round k: every third a hung run that is cancelled, else an edited source that runs."""
    if k % 3 == 2:
        window.editor.set_text(HANG)
        window.run()
        qtbot.waitUntil(lambda: window.worker.busy)
        qtbot.mouseClick(window.run_bar.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.worker.is_ready and not window.worker.busy, timeout=RUN_TIMEOUT)
        return
    window.editor.set_text(original + f"\n# edit {k}\n")
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        window.run()


@pytest.mark.slow
def test_many_runs_hold_no_more_files_threads_or_workers(qtbot, main_window):
    window = main_window
    original = window.editor.text()
    for k in range(3):  # warm up: first result, memory study, thread pool, caches
        one_round(qtbot, window, k, original)
    qtbot.waitUntil(lambda: window.memory.result() is not None, timeout=RUN_TIMEOUT)
    before = snapshot()
    for k in range(RUNS):
        one_round(qtbot, window, k, original)
    qtbot.waitUntil(lambda: snapshot()["workers"] == before["workers"], timeout=10_000)
    after = snapshot()
    print(f"\n{RUNS} runs: before {before}, after {after}")
    assert after["open files"] <= before["open files"]
    assert after["threads"] <= before["threads"] + 1  # Qt's thread pool may keep one more idle thread
    assert after["workers"] == before["workers"] == 1
    assert after["RSS MiB"] <= before["RSS MiB"] * 1.10
