"""The file's own bytes, through the real window: a file with a BOM, CRLF line ends, U+00A0,
U+2028 and U+2029 in string literals and a comment is opened, one line is typed with the real
keys, and Ctrl+S, the recovery copy and Run each see exactly the original bytes plus that line.
A save by root keeps the owner, group and mode of a user's file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from gradviz.app.preferences import setting_path
from gradviz.app.recovery import read_recovery
from gradviz.schema.library import find_builtin
from tests.app.test_saves_editor import opened, press_ctrl_s

RUN_TIMEOUT = 60_000
ODD_SOURCE = (
    "\ufeff# a comment with a\u00a0non-breaking space and a\u2028line separator\r\n"
    "KEYS = {'a\u00a0b': 1}\r\n"
    "LINE = 'x\u2028y'\r\n"
    "PARAGRAPH = 'p\u2029q'\r\n"
    'MIXED = """lone\rcarriage return"""  # and a tab:\t.\r\n'
    "\r\n"
    "def value():\r\n"
    "    return KEYS['a\u00a0b']\r\n"
)
TYPED = "x = 1"


def type_a_line_at_the_end(qtbot, window) -> None:
    editor = window.editor.editor
    editor.setFocus()
    editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClicks(editor, TYPED)
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert window.modified


def odd_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "odd.py"
    original = ODD_SOURCE.encode("utf-8")
    path.write_bytes(original)
    compile(original, str(path), "exec")  # the file is good Python to begin with
    return path, original


def test_save_writes_back_every_byte_the_user_did_not_type(qtbot, main_window, tmp_path):
    window = main_window
    path, original = odd_file(tmp_path)
    opened(qtbot, window, path)
    type_a_line_at_the_end(qtbot, window)
    expected = original + (TYPED + "\r\n").encode("utf-8")
    press_ctrl_s(qtbot, window)
    qtbot.waitUntil(lambda: not window.modified, timeout=5_000)
    saved = path.read_bytes()
    assert saved == expected
    compile(saved, str(path), "exec")
    # Run checks what Save wrote, as Python reads it (the BOM is the file's, not the code's)
    assert window.runner.build_request().code.source == saved.decode("utf-8-sig")


def test_the_recovery_copy_holds_the_same_bytes(qtbot, main_window, tmp_path):
    window = main_window
    path, original = odd_file(tmp_path)
    opened(qtbot, window, path)
    type_a_line_at_the_end(qtbot, window)
    window.source.autosave()
    assert window.source.flush_autosave()
    recovered = read_recovery(window.recovery.file)
    assert recovered.read_bytes() == original + (TYPED + "\r\n").encode("utf-8")
    assert path.read_bytes() == original  # autosave never touches the file itself


def test_run_checks_the_file_as_written(qtbot, main_window, tmp_path):
    """A dict key holds U+00A0 and the lookup a plain space: the file fails with KeyError (as
    ``gradviz check`` says); a window that turned U+00A0 into a space would pass it."""
    window = main_window
    example = find_builtin("linear").read_text(encoding="utf-8")
    path = tmp_path / "nbsp_key.py"
    path.write_bytes(("SCALE = {'a\u00a0b': 1.0}['a b']\n" + example).encode("utf-8"))
    opened(qtbot, window, path)
    with qtbot.waitSignal(window.run_failed, timeout=RUN_TIMEOUT) as blocker:
        qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert "KeyError" in str(blocker.args) + window.editor.message.text()


def test_a_save_by_root_keeps_the_owner_group_and_mode(qtbot, main_window, tmp_path):
    window = main_window
    path, original = odd_file(tmp_path)
    if os.geteuid() == 0:
        os.chown(path, 1000, 1000)
    os.chmod(path, 0o640)
    before = os.stat(path)
    opened(qtbot, window, path)
    type_a_line_at_the_end(qtbot, window)
    press_ctrl_s(qtbot, window)
    qtbot.waitUntil(lambda: not window.modified, timeout=5_000)
    after = os.stat(path)
    assert after.st_ino != before.st_ino  # replaced atomically, not written in place
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert path.read_bytes() == original + (TYPED + "\r\n").encode("utf-8")


def test_a_latin1_file_name_shows_in_the_title_and_reaches_the_recent_list(qtbot, main_window, tmp_path):
    window = main_window
    name = os.fsdecode(b"caf\xe9.py")  # not UTF-8: a surrogate escape stands for byte 0xE9
    path = tmp_path / name
    with open(os.fsencode(path), "wb") as f:
        f.write(b"x = 1\n")
    opened(qtbot, window, path)
    assert "caf\\xe9.py" in window.windowTitle()
    kept = window.preferences.recent()
    assert len(kept) == 1 and setting_path(kept[0]) == path  # the path itself, every byte
    type_a_line_at_the_end(qtbot, window)
    press_ctrl_s(qtbot, window)
    qtbot.waitUntil(lambda: not window.modified, timeout=5_000)
    assert open(os.fsencode(path), "rb").read() == b"x = 1\n" + TYPED.encode() + b"\n"
    window.source.set_source("", None)
    window.picker.file_chosen.emit(kept[0])  # chosen from the recent list: the same file opens
    qtbot.waitUntil(lambda: window.document.path == path, timeout=10_000)
