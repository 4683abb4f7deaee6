"""Recovery loses nothing: two real app processes killed with kill -9 both get their text back;
2000 left-behind texts are all listed and only the one discarded is deleted; closing the list
keeps them all; an edit made a moment before a kill -9 is offered; a text too big for the editor
is saved to a file straight from its recovery file."""

from __future__ import annotations

import json
import time

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog

from gradviz.app.recovery import RecoveryStore
from gradviz.app.recovery_dialog import RecoveryDialog
from tests.app.app_process import QUICK, kill_9, lines, read_until, run_app, start_app, states
from tests.app.test_main_window import RUN_TIMEOUT


def recovery_files(folder):
    return sorted(folder.glob("recovery-*.json"))


@pytest.mark.slow
def test_two_killed_windows_both_get_their_text_back(tmp_path):
    folder = tmp_path / "recovery"
    children = []  # two windows alive at once, each with unsaved text
    try:
        for marker in ("# first window's text", "# second window's text"):
            steps = [f"type:\\n{marker}\\n", "wait_recovery", "hold"]
            children.append(start_app(tmp_path, **QUICK, steps=steps))
            read_until(children[-1], "HOLDING")
    finally:
        for child in children:
            kill_9(child.pid)
            child.wait(10)
    assert len(recovery_files(folder)) == 2
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], CHILD_ANSWER="Later")  # closes the list
    assert code == 0, out
    assert any("2 texts" in asked for asked in lines(out, "ASKED:")), out
    assert len(recovery_files(folder)) == 2  # kept, both
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], CHILD_ANSWER="Yes")  # restores the newest
    assert code == 0, out
    assert "# second window's text" in states(out)[0]["text"]
    assert len(recovery_files(folder)) == 1  # the other one is still there
    assert "# first window's text" in RecoveryStore(folder).orphans()[0][0].text
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], CHILD_ANSWER="Yes")
    assert "# first window's text" in states(out)[0]["text"] and not recovery_files(folder)


def test_an_edit_just_before_kill_9_is_offered(tmp_path):
    marker = "# typed a moment before the crash"
    # SIGKILL 0.3 s after the edit
    child = start_app(tmp_path, **QUICK, steps=[f"type:\\n{marker}\\n", "crash:300"])
    try:
        read_until(child, "CRASHING")
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == -9
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], CHILD_ANSWER="Yes")
    assert code == 0, out
    assert marker in states(out)[0]["text"]


def left_behind(folder, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        record = {"text": f"# text {k}\n", "title": f"t{k}.py", "path": None, "saved_at": 1000.0 + k}
        (folder / f"recovery-wgone{k:05d}.json").write_text(json.dumps(record))


def run_dialog(qtbot, window, act) -> RecoveryDialog:
    """Offer recovery with the real dialog; ``act(dialog)`` runs once it is on screen."""
    shown = []

    def poll(left: int = 500) -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, RecoveryDialog):
            shown.append(dialog)
            act(dialog)
        elif left:
            QTimer.singleShot(20, lambda: poll(left - 1))

    QTimer.singleShot(0, poll)
    window.offer_recovery()
    assert shown, "the recovery list was not shown"
    return shown[0]


def test_2000_left_behind_texts_are_listed_and_only_the_declined_one_goes(qtbot, main_window, monkeypatch):
    window = main_window
    folder = window.recovery.directory
    left_behind(folder, 2000)
    counted = []

    def act(dialog):
        counted.append(dialog.model.rowCount())
        assert "2,000 texts" in dialog.message()
        dialog.select(0)
        assert "# text 1999" in dialog.preview.toPlainText()  # newest first
        dialog.discard_button.click()  # declined: this one only
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)  # the rest: later

    run_dialog(qtbot, window, act)
    assert counted == [2000]
    assert len(recovery_files(folder)) == 1999 and not (folder / "recovery-wgone01999.json").exists()
    run_dialog(qtbot, window, lambda dialog: dialog.close())  # the close button keeps them too
    assert len(recovery_files(folder)) == 1999


def test_a_text_too_big_for_the_editor_is_saved_to_a_file(qtbot, main_window, tmp_path, monkeypatch):
    window = main_window
    store = RecoveryStore(window.recovery.directory, key="wbig")
    big = "y = 2  # a line of a huge pasted text\n" * 300_000  # 11.4 MB: more than the editor opens
    assert store.write(big, "big.py", None)
    store._release_lock(delete=False)  # as a killed window leaves it
    target = tmp_path / "big_saved.py"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    before = window.editor.text()

    def act(dialog):
        assert not dialog.restore_button.isEnabled() and "Save As" in dialog.note.text()
        dialog.save_button.click()

    run_dialog(qtbot, window, act)
    assert target.read_text(encoding="utf-8") == big and window.editor.text() == before
    assert not recovery_files(window.recovery.directory)


def test_a_recovery_header_lists_fast_without_reading_the_text(tmp_path):
    store = RecoveryStore(tmp_path, key="wbig")
    assert store.write("z = 3\n" * 2_000_000, "big.py", None)
    store._release_lock(delete=False)
    started = time.perf_counter()
    [found], problems = RecoveryStore(tmp_path).orphans()
    assert problems == [] and found.size == 12_000_000 and found._text is None  # only the header was read
    assert found.text.startswith("z = 3\n") and time.perf_counter() >= started


def test_an_edit_made_during_a_run_is_kept_before_its_result_is_drawn(qtbot, main_window, monkeypatch):
    """Drawing a result holds the GUI thread (0.2 s idle, longer under load), and with it the
    autosave timer: an edit made while the run went on is handed to the writer first, so a
    crash while the result is drawn cannot take it. (The timer is made long here so that only
    the result can be what writes it.)"""
    from gradviz.app import source_controller
    from gradviz.app.recovery import read_recovery

    window = main_window
    window.load_builtin("buggy_linear_transpose")
    monkeypatch.setattr(source_controller, "autosave_delay_ms", lambda characters: 600_000)
    marker = "# typed while the check ran"
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        editor = window.editor.editor
        editor.moveCursor(editor.textCursor().MoveOperation.End)
        editor.insertPlainText(f"\n{marker}\n")
    assert window.source.flush_autosave()
    assert marker in read_recovery(window.recovery.file).text
