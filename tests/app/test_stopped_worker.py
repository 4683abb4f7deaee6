"""The window's worker stopped by user code (SIGSTOP): Cancel and the timeout still end the run.

A stopped worker answers nothing, so the window's client keeps its own deadline (a grace after
Cancel, the timeout plus a grace otherwise): it kills the worker with its whole tree, the banner
says what happened, and the next Run goes to a fresh worker. No stopped process is left.
"""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import Qt

from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.stopped_worker import kill_leftovers, read_pids, state, still_alive, stopping_source
from tests.worker.lifecycle import wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def start_stopping_run(qtbot, window, pid_file) -> tuple[int, int]:
    """Run the Function that stops the worker; (run pid, worker pid) once the worker is stopped."""
    window.editor.set_text(stopping_source(pid_file))
    window.run()
    qtbot.waitUntil(lambda: read_pids(pid_file) is not None, timeout=RUN_TIMEOUT)
    run, worker = read_pids(pid_file)
    assert worker == window.worker.pid
    qtbot.waitUntil(lambda: state(worker) == "T", timeout=10_000)
    return run, worker


def then_a_fresh_worker_runs(qtbot, window, original: str, old_pids: tuple[int, int]) -> None:
    assert wait_gone(list(old_pids), 10), f"still alive: {still_alive(old_pids)}"
    qtbot.waitUntil(lambda: window.worker.is_ready, timeout=RUN_TIMEOUT)
    assert window.worker.pid not in old_pids
    window.editor.set_text(original)
    run_and_wait(qtbot, window)
    assert window.current.result.passed


@pytest.mark.slow
def test_cancel_replaces_a_stopped_worker(qtbot, main_window, tmp_path):
    window, pid_file = main_window, tmp_path / "pids"
    original = window.editor.text()
    window.worker.grace = 2.0
    try:
        pids = start_stopping_run(qtbot, window, pid_file)
        qtbot.mouseClick(window.run_bar.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.banner.headline.text() == "Cancelled.", timeout=30_000)
        assert "stopped responding" in window.banner.details.text()
        assert window.run_bar.run_button.isEnabled()
        then_a_fresh_worker_runs(qtbot, window, original, pids)
    finally:
        kill_leftovers(read_pids(pid_file) or ())


@pytest.mark.slow
def test_timeout_replaces_a_stopped_worker(qtbot, main_window, tmp_path):
    window, pid_file = main_window, tmp_path / "pids"
    original = window.editor.text()
    window.worker.grace = 2.0
    window.run_settings.timeout = 2
    try:
        with qtbot.waitSignal(window.run_failed, timeout=RUN_TIMEOUT) as failed:
            pids = start_stopping_run(qtbot, window, pid_file)
        assert "did not finish within 2 s" in failed.args[0] and "stopped responding" in failed.args[0]
        assert window.banner.headline.text().startswith("The run timed out")
        assert window.banner.state == "error" and "stopped responding" in window.banner.details.text()
        then_a_fresh_worker_runs(qtbot, window, original, pids)
    finally:
        kill_leftovers(read_pids(pid_file) or ())
