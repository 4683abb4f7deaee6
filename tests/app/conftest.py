"""App-test fixtures. Results are produced by the real core (in this test process, which is
not the GUI process) and travel through the same JSON + .npy files the worker writes."""

from __future__ import annotations

import os

import pytest

if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"


@pytest.fixture
def make_check_result(tmp_path):
    """The CheckResult of a built-in example (by name) or of source text, computed by gradviz.core
    and read back from the files the worker writes, as the window reads it."""
    from gradviz.core.check import check_source
    from gradviz.core.loader import load_file, load_source
    from gradviz.schema.library import find_builtin
    from gradviz.schema.result_files import read_check_result, write_check_result
    from gradviz.schema.results import CheckResult
    from gradviz.schema.settings import CheckSettings

    counter = iter(range(10_000))

    def make(name: str | None = None, source: str | None = None, **settings) -> CheckResult:
        loaded = load_file(find_builtin(name)) if name else load_source(source, "<editor>")
        result = check_source(loaded, settings=CheckSettings(**settings))
        summary = write_check_result(result, tmp_path / f"result{next(counter)}")
        return read_check_result(summary)

    return make


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def settings_store(tmp_path):
    """A QSettings in a temp file, so tests never touch the user's preferences."""
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "gradviz.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def main_window(qtbot, settings_store, monkeypatch):
    """The real main window with its real worker process; fails if the worker outlives it."""
    import os

    from PySide6.QtWidgets import QMessageBox

    from gradviz.app.main_window import MainWindow
    from gradviz.app.recovery import RECOVERY_ENV

    monkeypatch.setenv(RECOVERY_ENV, str(settings_store.fileName() + ".recovery"))
    # an unexpected modal dialog would hang the test: answer "Discard" and record it
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a) or QMessageBox.StandardButton.Discard)
    window = MainWindow(settings_store, auto_run=False)
    window.asked = asked
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitActive(window):  # window shortcuts (Ctrl+Enter) need the active window
        window.activateWindow()
    qtbot.waitUntil(lambda: window.worker.is_ready, timeout=60_000)
    yield window
    pid = window.worker.pid
    window.close()
    if pid:
        with pytest.raises(ProcessLookupError):
            for _ in range(50):  # the worker is killed synchronously in shutdown(); allow reaping
                os.kill(pid, 0)
                qtbot.wait(20)
            raise AssertionError(f"worker {pid} still alive after the window closed")
