"""A key press copies nothing out of the editor: the stale mark, the Why? dock and the title
all follow a key without reading the document's text (each copy of a 9 MB text costs tens of
milliseconds, and a key may not wait for one). Counted in the real window, with a result on screen to compare against."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

import gradviz.app.panels.editor_panel as editor_panel
from gradviz.app.function_list import LIVE_SCAN_CHARS
from gradviz.schema.library import find_builtin
from tests.app.test_saves_editor import opened

RUN_TIMEOUT = 60_000


def big_example(chars: int) -> str:
    """The ``linear`` example repeated (each copy's class renamed) to ``chars`` characters."""
    example = find_builtin("linear").read_text(encoding="utf-8")
    parts, size, k = [], 0, 0
    while size < chars:
        parts.append(example.replace("LinearFunction", f"LinearFunction{k}") if k else example)
        size += len(parts[-1])
        k += 1
    return "".join(parts)


def test_a_key_press_reads_no_copy_of_the_text(qtbot, main_window, tmp_path, monkeypatch):
    window = main_window
    path = tmp_path / "big.py"
    path.write_text(big_example(LIVE_SCAN_CHARS + 100_000), encoding="utf-8")  # no live Function scan
    opened(qtbot, window, path)
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        window.run()
    assert window.stale_reason() is None
    copies: list[str] = []
    gui = threading.current_thread()
    real_from_editor = getattr(editor_panel, "from_editor", None)
    real_plain = window.editor.editor.toPlainText

    def from_editor(*args):
        if threading.current_thread() is gui:
            copies.append("text")
        return real_from_editor(*args)

    def to_plain_text():
        copies.append("toPlainText")
        return real_plain()

    monkeypatch.setattr(editor_panel, "from_editor", from_editor, raising=False)
    window.editor.editor.toPlainText = to_plain_text
    editor = window.editor.editor
    editor.setFocus()
    editor.moveCursor(QTextCursor.MoveOperation.End)
    for char in "x = 1":
        qtbot.keyClick(editor, char)
        assert copies == [], f"a key press read the text: {copies}"
    assert "the code has changed" in window.stale_reason()  # told apart by length: no copy
    assert copies == []
    for _ in "x = 1":
        qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.stale_reason() is None  # the same length again: compared by text, once
    assert len(copies) == 1
