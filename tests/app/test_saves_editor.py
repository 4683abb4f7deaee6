"""Ctrl+S for real: onto a real full disk (a small tmpfs), and after another program changed the
file, deleted it or replaced it by a symbolic link. The real Save action runs; the dialogs it
shows are answered by clicking their buttons."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from tests.fill_disk import fill, small_tmpfs

ORIGINAL = "import torch\n\n# the original, as it was opened\n" * 10


def opened(qtbot, window, path: Path) -> None:
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        window.open_file(path)


def type_text(qtbot, window, text: str) -> None:
    editor = window.editor.editor
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    editor.insertPlainText(text)
    assert window.modified


def press_ctrl_s(qtbot, window) -> None:
    window.editor.editor.setFocus()
    qtbot.keyClick(window.editor.editor, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)


def answer_box(button: str, seen: list[str], tries: int = 500) -> None:
    """Click ``button`` on the next modal message box (its text goes to ``seen``)."""

    def poll(left: int = tries) -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(box.text())
            [chosen] = [b for b in box.buttons() if b.text().replace("&", "") == button]
            chosen.click()
        elif left:
            QTimer.singleShot(20, lambda: poll(left - 1))

    QTimer.singleShot(0, poll)


def test_ctrl_s_onto_a_full_disk_keeps_the_file_and_the_text(qtbot, main_window, tmp_path, monkeypatch):
    window = main_window
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warned.append(a[2]))
    with small_tmpfs(tmp_path / "disk", size="256k") as disk:
        mine = disk / "mine.py"
        mine.write_text(ORIGINAL, encoding="utf-8")
        opened(qtbot, window, mine)
        fill(disk)
        type_text(qtbot, window, "x = 1  # a long edit\n" * 5000)  # 105 KB: more than the disk holds
        edited = window.editor.text()
        press_ctrl_s(qtbot, window)
        assert mine.read_text(encoding="utf-8") == ORIGINAL  # not truncated, not gone
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "mine.py"]  # no temporary file left
        assert window.editor.text() == edited and window.modified
        assert len(warned) == 1 and "No space left on device" in warned[0] and str(mine) in warned[0]
        (disk / "filler").unlink()  # room again: the same Save works
        press_ctrl_s(qtbot, window)
        assert mine.read_text(encoding="utf-8") == edited and not window.modified


def test_a_file_changed_by_another_program_is_not_overwritten_unasked(qtbot, main_window, tmp_path):
    window = main_window
    mine = tmp_path / "mine.py"
    mine.write_text(ORIGINAL, encoding="utf-8")
    opened(qtbot, window, mine)
    type_text(qtbot, window, "# my edit\n")
    theirs = ORIGINAL + "# their edit, written by another program\n"
    mine.write_text(theirs, encoding="utf-8")
    seen: list[str] = []
    answer_box("Cancel", seen)
    window.actions["save"].trigger()
    assert len(seen) == 1 and "another program changed it" in seen[0]
    assert mine.read_text(encoding="utf-8") == theirs and window.modified
    answer_box("Overwrite", seen)
    window.actions["save"].trigger()
    assert len(seen) == 2 and mine.read_text(encoding="utf-8") == window.editor.text() and not window.modified
    type_text(qtbot, window, "# and on\n")  # unchanged on disk since our save: no question
    window.actions["save"].trigger()
    assert len(seen) == 2 and mine.read_text(encoding="utf-8") == window.editor.text()


def test_a_file_replaced_by_a_link_is_never_written_through(qtbot, main_window, tmp_path):
    window = main_window
    mine = tmp_path / "mine.py"
    mine.write_text(ORIGINAL, encoding="utf-8")
    opened(qtbot, window, mine)
    type_text(qtbot, window, "# my edit\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's file\n", encoding="utf-8")
    mine.unlink()
    mine.symlink_to(victim)
    seen: list[str] = []
    answer_box("Overwrite", seen)
    press_ctrl_s(qtbot, window)
    assert len(seen) == 1 and f"replaced by a symbolic link to {victim}" in seen[0]
    assert victim.read_text(encoding="utf-8") == "someone else's file\n"  # the link's target is untouched
    assert not mine.is_symlink() and mine.read_text(encoding="utf-8") == window.editor.text()


def test_a_file_deleted_behind_the_app_is_saved_again_after_asking(qtbot, main_window, tmp_path, monkeypatch):
    window = main_window
    mine = tmp_path / "mine.py"
    mine.write_text(ORIGINAL, encoding="utf-8")
    opened(qtbot, window, mine)
    type_text(qtbot, window, "# my edit\n")
    mine.unlink()
    seen: list[str] = []
    answer_box("Save As…", seen)
    elsewhere = tmp_path / "elsewhere.py"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(elsewhere), ""))
    window.actions["save"].trigger()
    assert "deleted" in seen[0] and elsewhere.read_text(encoding="utf-8") == window.editor.text()
    assert not mine.exists()
    type_text(qtbot, window, "# more\n")
    elsewhere.unlink()
    answer_box("Save Again", seen)
    window.actions["save"].trigger()
    assert len(seen) == 2 and elsewhere.read_text(encoding="utf-8") == window.editor.text()


def test_a_file_opened_through_a_link_is_saved_through_it(qtbot, main_window, tmp_path):
    window = main_window
    real = tmp_path / "real.py"
    real.write_text(ORIGINAL, encoding="utf-8")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    opened(qtbot, window, link)
    type_text(qtbot, window, "# my edit\n")
    seen: list[str] = []
    answer_box("Cancel", seen, tries=5)  # nothing to ask: the link was there when it was opened
    window.actions["save"].trigger()
    assert seen == [] and link.is_symlink() and real.read_text(encoding="utf-8") == window.editor.text()
