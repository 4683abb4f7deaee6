"""Nothing is lost: recovery after kill -9 of a real app process, sessions that never run code.

Files and sessions are read off the GUI thread: the tests wait for ``source.loaded`` (or
``source.refused``) the way the window does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from gradviz.app.recovery import RECOVERY_ENV, RecoveryStore
from gradviz.schema.library import find_builtin
from gradviz.schema.session import load_session
from tests.app.saves_helpers import answer_recovery
from tests.paths import ROOT

MARKER = "# typed just before the crash: keep me"

CHILD = textwrap.dedent(
    f"""
    import os
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from gradviz.app.main_window import MainWindow
    window = MainWindow(QSettings(os.environ["CHILD_SETTINGS"], QSettings.Format.IniFormat), auto_run=False)
    window.show()
    def type_text():
        window.editor.editor.moveCursor(window.editor.editor.textCursor().MoveOperation.End)
        window.editor.editor.insertPlainText("\\n{MARKER}\\n")
    QTimer.singleShot(0, type_text)
    app.exec()
    """
)


def test_kill_9_of_the_app_then_next_launch_restores_the_text(qtbot, tmp_path, settings_store, monkeypatch):
    recovery = tmp_path / "recovery"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        RECOVERY_ENV: str(recovery),
        "CHILD_SETTINGS": str(tmp_path / "child.ini"),
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stderr=subprocess.DEVNULL)
    try:
        qtbot.waitUntil(lambda: any(recovery.glob("recovery-*.json")), timeout=60_000)
        [file] = recovery.glob("recovery-*.json")
        assert str(child.pid) not in file.name  # keyed by the window, not the process id
        assert file.with_suffix(".lock").exists()
        assert not RecoveryStore(recovery).orphans()[0]  # locked: its window is alive, nobody else offers it
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)

    from gradviz.app.main_window import MainWindow

    monkeypatch.setenv(RECOVERY_ENV, str(recovery))
    asked = []
    answer_recovery(monkeypatch, "restore", asked)
    window = MainWindow(settings_store, auto_run=False)
    qtbot.addWidget(window)
    try:
        assert window.offer_recovery()
        assert "linear.py" in asked[0].restored.title
        assert MARKER in window.editor.text()
        assert window.modified
        assert not file.exists()
        assert window.source.flush_autosave()
        assert window.recovery.file.exists()  # still safe if we die too
    finally:
        window.close()
    assert not list(recovery.glob("recovery-*"))  # a clean exit leaves nothing


def test_declining_recovery_discards_it(qtbot, main_window, monkeypatch):
    window = main_window
    dead = window.recovery.directory / "recovery-wgone.json"  # a window that is gone: no lock held
    dead.parent.mkdir(parents=True, exist_ok=True)
    dead.write_text(json.dumps({"text": "lost text", "title": "mine.py", "path": None, "saved_at": 1.0}))
    answer_recovery(monkeypatch, "discard")
    before = window.editor.text()
    assert not window.offer_recovery()
    assert window.editor.text() == before and not dead.exists()


def test_autosave_writes_and_clears(qtbot, main_window):
    window = main_window
    window.editor.editor.insertPlainText("# edit\n")
    qtbot.waitUntil(lambda: window.recovery.file.exists(), timeout=5_000)
    window.editor.editor.undo()
    qtbot.waitUntil(lambda: not window.recovery.file.exists(), timeout=5_000)


def test_session_round_trip_restores_everything_and_runs_nothing(qtbot, main_window, tmp_path):
    window = main_window
    window.load_builtin("kill_head")
    window.run_bar.dtype.setCurrentText("float32")
    window.memory.layers_spin.setValue(5)
    path = tmp_path / "lecture.gradviz"
    assert window.save_session(path)
    assert load_session(path).builtin == "kill_head"

    window.load_builtin("linear")
    window.run_bar.dtype.setCurrentText("float64")
    window.memory.layers_spin.setValue(1)
    busy_before = window.worker.busy
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        window.open_session(path)
    assert window.editor.text() == find_builtin("kill_head").read_text(encoding="utf-8")
    assert window.document.builtin_name == "kill_head"
    assert window.run_settings.dtype == "float32" and window.run_bar.dtype.currentText() == "float32"
    assert window.memory.layers_spin.value() == 5
    assert window.worker.busy == busy_before is False and window.current.result is None  # opening ran nothing


def test_corrupt_or_future_session_changes_nothing(qtbot, main_window, tmp_path, monkeypatch):
    window = main_window
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]))
    before = (window.editor.text(), window.run_settings.to_dict())
    bad = tmp_path / "bad.gradviz"
    for content in ('{"format": "gradviz-session", "version": 99, "code": "x"}', "{not json"):
        bad.write_text(content, encoding="utf-8")
        with qtbot.waitSignal(window.source.refused, timeout=10_000):
            window.open_session(bad)
        assert (window.editor.text(), window.run_settings.to_dict()) == before
    assert "newer gradviz" in warnings[0] and "broken JSON" in warnings[1]


def test_opening_a_py_file_never_runs_it(qtbot, main_window, tmp_path):
    window = main_window
    sentinel = tmp_path / "ran"
    path = tmp_path / "evil.py"
    path.write_text(f"open({str(sentinel)!r}, 'w').close()\n", encoding="utf-8")
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        window.open_file(Path(path))
    assert window.editor.text().startswith("open(") and not window.worker.busy
    assert not sentinel.exists()


def test_unsaved_changes_prompt_on_open_and_on_close(qtbot, main_window, monkeypatch, tmp_path):
    window = main_window
    window.editor.editor.insertPlainText("# mine\n")
    edited = window.editor.text()
    answers = iter([QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Cancel])
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or next(answers))
    window.load_builtin("kill_head")  # Cancel: nothing replaced
    assert window.editor.text() == edited and len(asked) == 1
    window.close()  # Cancel: the window stays, the text too
    assert window.isVisible() and window.editor.text() == edited and len(asked) == 2
    saved = tmp_path / "kept.py"
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Save)
    from PySide6.QtWidgets import QFileDialog

    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(saved), ""))
    window.load_builtin("kill_head")  # Save: written first, then replaced
    assert saved.read_text(encoding="utf-8") == edited
    assert window.document.builtin_name == "kill_head"


def test_a_bad_value_in_a_session_is_dropped_and_named(qtbot, main_window, tmp_path):
    from gradviz.schema.settings import MemoryOptions, dtype_defaults

    window = main_window
    path = tmp_path / "odd.gradviz"
    path.write_text(
        json.dumps({
            "format": "gradviz-session", "version": 1, "code": "x = 1\n",
            "run": {"eps": -1.0, "dtype": "float32"}, "memory": {"layers": 0, "kernel": 5},
        }),
        encoding="utf-8",
    )
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        window.open_session(path)
    assert window.run_settings.dtype == "float32" and window.run_bar.dtype.currentText() == "float32"
    assert window.run_settings.eps == dtype_defaults("float32").eps  # a bad eps gives way to the dtype's
    assert window.memory.kernel_spin.value() == 5 and window.memory_options.layers == MemoryOptions().layers
    message = window.statusBar().currentMessage()
    assert "eps must be positive" in message and "layers must be a positive whole number" in message


@pytest.fixture
def odd_preferences(settings_store):
    """Preferences a hand edit (or an older gradviz) left behind."""
    for key, value in (("run/eps", "tiny"), ("run/timeout", "-3"), ("run/dtype", "float32"), ("run/atol", "1e-07")):
        settings_store.setValue(key, value)
    settings_store.sync()


def test_bad_saved_preferences_are_dropped_at_startup(odd_preferences, main_window, settings_store):
    from gradviz.schema.settings import RUN_TIMEOUT_S, dtype_defaults

    settings = main_window.run_settings
    assert (settings.dtype, settings.atol) == ("float32", 1e-7)
    assert settings.eps == dtype_defaults("float32").eps and settings.timeout == RUN_TIMEOUT_S
    assert main_window.run_bar.tolerance["atol"].value() == 1e-7
    [notice] = main_window.source.notices  # named once, and gone from the file: never read again
    assert "run/eps" in notice and "run/timeout" in notice
    assert settings_store.value("run/eps", "") != "tiny" and settings_store.value("run/timeout", "") != "-3"
