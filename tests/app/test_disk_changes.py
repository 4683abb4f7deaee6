"""The open file changed by another program, under the real window and its real worker: Run
checks the text on disk when the editor has no edits of its own (and says it loaded it), the
watcher loads it by itself, and with unsaved edits the user is asked (answered here by clicking
the question's buttons)."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt

from gradviz.schema.library import find_builtin
from tests.app.test_saves_editor import opened

RUN_TIMEOUT = 60_000
BUGGY_LINE, FIXED_LINE = "return grad_output * x  #", "return 2 * grad_output * x  #"


def buggy_file(tmp_path: Path) -> tuple[Path, str, str]:
    buggy = find_builtin("buggy_square_factor").read_text(encoding="utf-8")
    assert BUGGY_LINE in buggy
    path = tmp_path / "square.py"
    path.write_text(buggy, encoding="utf-8")
    return path, buggy, buggy.replace(BUGGY_LINE, FIXED_LINE)


def replace_as_editors_do(path: Path, text: str) -> None:
    """Write a new file beside it and rename it over the old one (a new inode, as vim and most
    editors save)."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_and_wait(qtbot, window) -> None:
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_run_checks_the_file_another_editor_just_fixed(qtbot, main_window, tmp_path):
    window = main_window
    path, _buggy, fixed = buggy_file(tmp_path)
    opened(qtbot, window, path)
    run_and_wait(qtbot, window)
    assert not window.current.result.passed
    replace_as_editors_do(path, fixed)
    run_and_wait(qtbot, window)  # at once: before the watcher's look, Run looks itself
    assert window.current.result.passed
    assert window.editor.text() == fixed and not window.modified
    assert any("square.py changed on disk: loaded it again" in n for n in window.source.notices)
    assert "square.py changed on disk" in window.statusBar().currentMessage()


def test_the_watcher_loads_a_change_written_in_place(qtbot, main_window, tmp_path):
    window = main_window
    path, _buggy, fixed = buggy_file(tmp_path)
    opened(qtbot, window, path)
    with path.open("w", encoding="utf-8") as f:  # the same inode, rewritten
        f.write(fixed)
    qtbot.waitUntil(lambda: window.editor.text() == fixed, timeout=10_000)
    assert not window.modified
    replace_as_editors_do(path, fixed + "# and again\n")  # still watched after a rename replaced it
    qtbot.waitUntil(lambda: window.editor.text().endswith("# and again\n"), timeout=10_000)


def _question(qtbot, window):
    qtbot.waitUntil(lambda: window.source.disk.question is not None, timeout=10_000)
    box = window.source.disk.question
    assert box.isVisible() and "unsaved changes" in box.text()
    return box


def _click(qtbot, box, label: str) -> None:
    [button] = [b for b in box.buttons() if b.text().replace("&", "") == label]
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_with_unsaved_edits_keeping_them_keeps_them(qtbot, main_window, tmp_path):
    window = main_window
    path, _buggy, fixed = buggy_file(tmp_path)
    opened(qtbot, window, path)
    window.editor.editor.setFocus()
    qtbot.keyClicks(window.editor.editor, "# mine ")
    edited = window.editor.text()
    replace_as_editors_do(path, fixed)
    box = _question(qtbot, window)
    _click(qtbot, box, "Keep My Changes")
    qtbot.waitUntil(lambda: window.source.disk.question is None, timeout=5_000)
    assert window.editor.text() == edited and window.modified
    assert path.read_text(encoding="utf-8") == fixed
    window.source.code_for_run()  # the same change is not asked about again
    assert window.source.disk.question is None


def test_with_unsaved_edits_loading_from_disk_replaces_them(qtbot, main_window, tmp_path):
    window = main_window
    path, _buggy, fixed = buggy_file(tmp_path)
    opened(qtbot, window, path)
    window.editor.editor.setFocus()
    qtbot.keyClicks(window.editor.editor, "# mine ")
    replace_as_editors_do(path, fixed)
    _click(qtbot, _question(qtbot, window), "Load From Disk")
    qtbot.waitUntil(lambda: window.editor.text() == fixed, timeout=5_000)
    assert not window.modified
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        window.run()
    assert window.current.result.passed
