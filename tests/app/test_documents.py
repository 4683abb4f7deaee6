"""Documents in the real window: each starts a fresh undo history, a session's path is only a
suggestion for Save, and files or sessions that would freeze or balloon the window (real FIFOs,
/dev/zero, directories, 100 MB files, JSON nested too deep, numbers that overflow) are refused at
once, off the GUI thread, with one dialog and nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import QElapsedTimer, Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from tests.app.saves_helpers import answer_recovery

OPENS_WITHIN_MS = 500  # open_file / open_session only start the read


def type_into(qtbot, window, text: str) -> None:
    editor = window.editor.editor
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    for k, line in enumerate(text.split("\n")):  # QTest has no key for "\n": press Return
        if k:
            qtbot.keyClick(editor, Qt.Key.Key_Return)
        if line:
            qtbot.keyClicks(editor, line)


def press(qtbot, window, key, modifier=Qt.KeyboardModifier.ControlModifier) -> None:
    window.editor.editor.setFocus()
    qtbot.keyClick(window.editor.editor, key, modifier)


def opened(qtbot, window, path: Path) -> None:
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        if path.suffix == ".gradviz":
            window.open_session(path)
        else:
            window.open_file(path)


@pytest.fixture
def saves(monkeypatch):
    """Save As dialogs: record where each one started, and cancel it."""
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: asked.append(a[2]) or ("", ""))
    return asked


# --- undo ------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["file", "example", "session", "new"])
def test_undo_never_crosses_into_the_previous_document(qtbot, main_window, tmp_path, how):
    window = main_window
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("# file A\nA = 1\n", encoding="utf-8")
    b.write_text("# file B\nB = 2\n", encoding="utf-8")
    opened(qtbot, window, a)
    type_into(qtbot, window, "# edited A\n")
    window.source.save()  # A is saved with its edit: no question when B replaces it
    if how == "file":
        opened(qtbot, window, b)
    elif how == "example":
        window.load_builtin("kill_head")
    elif how == "session":
        session = tmp_path / "b.gradviz"
        session.write_text(json.dumps({"format": "gradviz-session", "version": 1, "code": b.read_text()}))
        opened(qtbot, window, session)
    else:
        window.source.new_function()
    shown = window.editor.text()
    assert "file A" not in shown
    press(qtbot, window, Qt.Key.Key_Z)  # Ctrl+Z: nothing to undo in this document
    assert window.editor.text() == shown and not window.editor.editor.document().isUndoAvailable()
    if how == "file":
        press(qtbot, window, Qt.Key.Key_S)  # Ctrl+S writes B's own text back, never A's
        assert b.read_text(encoding="utf-8") == "# file B\nB = 2\n"
    assert a.read_text(encoding="utf-8") == "# file A\nA = 1\n# edited A\n"


def test_undo_still_works_within_a_document(qtbot, main_window, tmp_path):
    window = main_window
    a = tmp_path / "a.py"
    a.write_text("A = 1\n", encoding="utf-8")
    opened(qtbot, window, a)
    type_into(qtbot, window, "# typed")
    assert window.modified
    for _ in range(len("# typed")):
        press(qtbot, window, Qt.Key.Key_Z)
    assert window.editor.text() == "A = 1\n" and not window.modified


# --- a session's path is a suggestion --------------------------------------------------------
def crafted_session(tmp_path: Path, victim: Path) -> Path:
    session = tmp_path / "crafted.gradviz"
    session.write_text(json.dumps({
        "format": "gradviz-session", "version": 1, "code": "print('from the session')\n", "path": str(victim),
    }))  # fmt: skip
    return session


def test_ctrl_s_after_a_crafted_session_asks_instead_of_overwriting(qtbot, main_window, tmp_path, saves):
    window = main_window
    victim = tmp_path / "precious.txt"
    victim.write_text("my thesis\n", encoding="utf-8")
    opened(qtbot, window, crafted_session(tmp_path, victim))
    type_into(qtbot, window, "# and an edit\n")
    press(qtbot, window, Qt.Key.Key_S)
    assert victim.read_text(encoding="utf-8") == "my thesis\n"
    assert saves == [str(victim)]  # Save As, prefilled with the suggestion
    assert window.modified


def test_a_session_path_the_user_opened_here_is_saved_without_asking(qtbot, main_window, tmp_path, saves):
    window = main_window
    mine = tmp_path / "mine.py"
    mine.write_text("x = 1\n", encoding="utf-8")
    opened(qtbot, window, mine)  # this window read that very file from disk
    opened(qtbot, window, crafted_session(tmp_path, mine))
    press(qtbot, window, Qt.Key.Key_S)
    assert saves == [] and mine.read_text(encoding="utf-8") == "print('from the session')\n"


def test_a_crafted_session_path_is_not_reopened_at_the_next_launch(qtbot, main_window, tmp_path):
    window = main_window
    victim = tmp_path / "precious.py"
    victim.write_text("x = 1\n", encoding="utf-8")
    opened(qtbot, window, crafted_session(tmp_path, victim))
    window._save_settings()
    assert window.preferences.last_source() != str(victim)  # else the next launch "opened it from disk"


def test_recovered_text_saves_through_save_as(qtbot, main_window, tmp_path, saves, monkeypatch):
    window = main_window
    victim = tmp_path / "elsewhere.py"
    victim.write_text("x = 1\n", encoding="utf-8")
    dead = window.recovery.directory / "recovery-wgone.json"
    dead.parent.mkdir(parents=True, exist_ok=True)
    dead.write_text(json.dumps({"text": "recovered\n", "title": "elsewhere.py", "path": str(victim), "saved_at": 1}))
    answer_recovery(monkeypatch, "restore")
    assert window.offer_recovery()
    press(qtbot, window, Qt.Key.Key_S)
    assert saves == [str(victim)] and victim.read_text(encoding="utf-8") == "x = 1\n"
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)  # let it close


# --- refusals --------------------------------------------------------------------------------
def fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)  # nobody writes to it: reading it would block forever
    return path


def sparse(tmp_path: Path, name: str, size: int) -> Path:
    path = tmp_path / name
    with open(path, "wb") as f:
        f.truncate(size)  # that big by its size, without the disk space: /dev/zero-like content
    return path


def session_text(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = '{"format": "gradviz-session", "version": 1, "code": "x = 1\\n"'
CASES = {
    "fifo.py": (lambda t: fifo(t, "pipe.py"), "FIFO"),
    "dev-zero.py": (lambda t: Path("/dev/zero"), "device"),
    "directory.py": (lambda t: t, "directory"),
    "huge.py": (lambda t: sparse(t, "huge.py", 200 * 2**20), "200.0 MiB"),
    "fifo.gradviz": (lambda t: fifo(t, "pipe.gradviz"), "FIFO"),
    "100MB.gradviz": (lambda t: sparse(t, "big.gradviz", 100 * 2**20), "100.0 MiB"),
    "deep.gradviz": (lambda t: session_text(t, "deep.gradviz", GOOD + ', "z": ' + "[" * 200_000 + "]" * 200_000 + "}"),
                     "nested too deeply"),
    "infinite.gradviz": (lambda t: session_text(t, "inf.gradviz", GOOD + ', "run": {"dtype": "float32", "eps": Infinity}}'),
                         "Infinity"),
    "overflow.gradviz": (lambda t: session_text(t, "big.gradviz", GOOD + ', "memory": {"layers": 1' + "0" * 30 + "}}"),
                         "overflows"),
}


def window_state(window) -> tuple:
    return (
        window.editor.text(), window.document.path, window.document.builtin_name, window.windowTitle(),
        window.run_settings.to_dict(), window.memory_options.to_dict(), window.modified,
    )  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_what_would_freeze_the_window_is_refused_at_once_and_changes_nothing(
    qtbot, main_window, tmp_path, monkeypatch, case
):
    window = main_window
    make, expected = CASES[case]
    path = make(tmp_path)
    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]))
    type_into(qtbot, window, "# unsaved work\n")  # a refusal must not touch it, nor ask about it
    before = window_state(window)
    clock = QElapsedTimer()
    clock.start()
    with qtbot.waitSignal(window.source.refused, timeout=10_000):
        if case.endswith(".gradviz"):
            window.open_session(path)
        else:
            window.open_file(path)
        assert clock.elapsed() < OPENS_WITHIN_MS  # the check and the read are off the GUI thread
    assert len(warnings) == 1 and expected in warnings[0]
    assert window_state(window) == before and window.asked == []


def test_a_session_that_is_refused_half_way_changes_nothing(qtbot, main_window, tmp_path, monkeypatch):
    """Good code and a good dtype, then an infinite number: nothing of it applies."""
    window = main_window
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: None)
    path = session_text(tmp_path, "half.gradviz", '{"format": "gradviz-session", "version": 1, "code": "NEW = 1\\n", '
                        '"run": {"dtype": "float32", "atol": 1e999}}')
    before = window_state(window)
    with qtbot.waitSignal(window.source.refused, timeout=10_000):
        window.open_session(path)
    assert window_state(window) == before


def test_opening_b_while_a_is_still_read_shows_b(qtbot, main_window, tmp_path):
    window = main_window
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("A = 1\n", encoding="utf-8")
    b.write_text("B = 2\n", encoding="utf-8")
    with qtbot.waitSignal(window.source.loaded, timeout=10_000) as blocker:
        window.open_file(a)
        window.open_file(b)
    assert blocker.args == [str(b)]
    qtbot.waitUntil(lambda: not window.source.loader.busy)
    assert window.editor.text() == "B = 2\n" and window.document.path == b


def test_a_megabyte_file_opens_and_its_functions_are_listed(qtbot, main_window, tmp_path):
    from bench.typing_latency import big_source

    window = main_window
    text = big_source(27_000)  # about 1 MB
    path = tmp_path / "big.py"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size > 10**6
    opened(qtbot, window, path)
    qtbot.waitUntil(lambda: window.picker.functions.count() > 500, timeout=10_000)
    assert window.picker.functions.itemText(0) == "LinearFunction0"
