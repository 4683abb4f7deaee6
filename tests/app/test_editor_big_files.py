"""Files that can freeze an editor, opened and typed into in the real window.

A 10 MiB file that is one line costs seconds to lay out and seconds a key; 2 MB of unclosed
``class A(`` lines cost seconds a key if every key starts a Function-list scan of its own.
Speeds are measured in bench/typing_latency.py; these tests assert the structure that keeps
them: the long line is refused with one message, one scan at a time, stale answers dropped, a
scan linear in the text, a long line never lexed.
"""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QMessageBox

from bench.editor_files import class_headers_text, write_class_headers, write_long_line
from gradviz.app import function_list
from gradviz.app.editor_limits import MAX_LINE_CHARS, long_line_refusal
from gradviz.app.function_list import (
    LIVE_SCAN_CHARS,
    MAX_HEADER_CHARS,
    FunctionListUpdater,
    scan_function_names,
)
from gradviz.app.panels.editor_panel import EditorPanel


def scan_threads() -> int:
    """Scan threads alive: one scanning, and at most one more that has answered and is ending."""
    return sum(t.name == "gradviz-function-list" for t in threading.enumerate())


@pytest.fixture
def warnings(monkeypatch):
    """The message boxes the window shows (answered at once: a modal box would hang the test)."""
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda _parent, _title, message, *a, **k: shown.append(message))
    return shown


def type_keys(qtbot, editor, keys: str, pause_ms: int = 0) -> int:
    """Type ``keys`` into the editor; the most scan threads seen alive after any key."""
    most = scan_threads()
    for char in keys:
        if char == "\n":
            qtbot.keyClick(editor, Qt.Key.Key_Return)
        else:
            qtbot.keyClick(editor, char)
        qtbot.wait(pause_ms)
        most = max(most, scan_threads())
    return most


def test_a_file_that_is_one_ten_mib_line_is_refused_with_one_message(qtbot, main_window, tmp_path, warnings):
    path = write_long_line(tmp_path)
    before = main_window.editor.text()
    refused: list[str] = []
    main_window.source.refused.connect(refused.append)
    main_window.source.open_file(path)
    qtbot.waitUntil(lambda: bool(refused), timeout=30_000)
    assert len(warnings) == 1 and warnings == refused
    assert f"line 1 is {path.stat().st_size:,} characters long" in refused[0]
    assert "\n" not in refused[0]
    assert main_window.editor.text() == before  # nothing replaced, nothing lost
    assert not main_window.editor.editor.document().isModified()


def test_a_line_just_within_the_limit_opens(qtbot, main_window, tmp_path, warnings):
    path = tmp_path / "wide.py"
    path.write_text("x = 1\n" + "#" * MAX_LINE_CHARS + "\n", encoding="utf-8")
    main_window.source.open_file(path)
    qtbot.waitUntil(lambda: main_window.editor.text() == path.read_text(encoding="utf-8"), timeout=30_000)
    assert warnings == []


def test_the_refusal_names_the_first_long_line():
    text = "a = 1\n" + "b" * (MAX_LINE_CHARS + 1) + "\n" + "c" * (3 * MAX_LINE_CHARS)
    assert long_line_refusal(text, "Cannot open x.py").startswith(
        f"Cannot open x.py: line 2 is {MAX_LINE_CHARS + 1:,} characters long"
    )
    assert long_line_refusal("a = 1\n" * 10_000, "Cannot open x.py") is None


def test_typing_into_two_mb_of_unclosed_class_headers_runs_at_most_one_scan(qtbot, main_window, tmp_path, warnings):
    path = write_class_headers(tmp_path)
    main_window.source.open_file(path)
    qtbot.waitUntil(lambda: main_window.editor.text() == path.read_text(encoding="utf-8"), timeout=60_000)
    editor = main_window.editor.editor
    editor.setFocus()
    most = type_keys(qtbot, editor, "class B(Function):\n    pass\n", pause_ms=40)
    qtbot.waitUntil(lambda: not main_window.source.functions.pending, timeout=60_000)
    assert most <= 2  # 17 before: one per pause, none cancelled
    assert main_window.editor.text().count("class B(Function):") == 1
    assert warnings == []


@pytest.mark.slow
def test_typing_into_a_file_of_class_headers_under_the_live_limit_scans_one_at_a_time(
    qtbot, main_window, tmp_path, warnings
):
    """Here every pause starts a scan (the text is short enough to follow live)."""
    path = tmp_path / "headers.py"
    path.write_text(class_headers_text(LIVE_SCAN_CHARS - 50_000), encoding="utf-8")
    main_window.source.open_file(path)
    qtbot.waitUntil(lambda: main_window.editor.text() == path.read_text(encoding="utf-8"), timeout=60_000)
    editor = main_window.editor.editor
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.setFocus()
    most = type_keys(qtbot, editor, ")\nclass Typed(torch.autograd.Function):\n", pause_ms=function_list.REPARSE_DELAY_MS)
    assert most <= 2  # 17 before: one per pause, none cancelled
    qtbot.waitUntil(lambda: main_window.picker.functions.count() == 1, timeout=60_000)
    assert main_window.picker.functions.itemText(0) == "Typed"


def test_a_newer_scan_waits_for_the_running_one_and_only_the_newest_answer_is_shown(qtbot, monkeypatch):
    gate = threading.Event()
    lock = threading.Lock()
    active, most, scanned = [0], [0], []

    def held(text: str, **options) -> list[str]:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        try:
            gate.wait(20)  # held until the test has asked for newer scans
            scanned.append(text)
            return scan_function_names(text)
        finally:
            with lock:
                active[0] -= 1

    monkeypatch.setattr(function_list, "scan_function_names", held)
    text = ["class Old(Function):\n    pass\n"]
    updater = FunctionListUpdater(lambda: text[0])
    found: list[list[str]] = []
    updater.found.connect(found.append)
    updater.scan_now()
    qtbot.waitUntil(lambda: active[0] == 1)
    for name in ("Middle", "New"):
        text[0] = f"class {name}(Function):\n    pass\n"
        updater.scan_now()
        qtbot.wait(50)
        assert active[0] == 1  # the newer scan waits: no pile of threads
    gate.set()
    qtbot.waitUntil(lambda: not updater.pending, timeout=20_000)
    assert most[0] == 1
    assert found == [["New"]]  # Old's answer was dropped, Middle was never scanned
    assert scanned == [text[0].replace("New", "Old"), text[0]]


def test_a_cancelled_scan_stops():
    with pytest.raises(function_list.ScanCancelled):
        scan_function_names(class_headers_text(2_000_000), cancelled=lambda: True)


def test_the_scan_reads_each_character_of_unclosed_headers_about_once(monkeypatch):
    """2 MB of ``class A(``: each header's bases are looked for up to the next header, not 4,000
    characters on (222,222 x 4,000 characters would be a quadratic scan)."""
    text = class_headers_text(2_000_000)
    looked_at = [0]
    real = function_list._bases_text

    def counted(source: str, start: int, *rest) -> str | None:
        end = min(rest[0] if rest else len(source), start + MAX_HEADER_CHARS)
        looked_at[0] += end - start
        return real(source, start, *rest)

    monkeypatch.setattr(function_list, "_bases_text", counted)
    assert scan_function_names(text) == []
    assert looked_at[0] <= len(text)


def test_a_pasted_line_longer_than_the_limit_is_never_lexed(qtbot, monkeypatch):
    panel = EditorPanel()
    qtbot.addWidget(panel)
    panel.set_text("import torch\n\n")
    highlighter = panel.editor.highlighter
    lexed: list[int] = []
    lexer = highlighter._lexer
    real = lexer.get_tokens_unprocessed
    monkeypatch.setattr(lexer, "get_tokens_unprocessed", lambda text: lexed.append(len(text)) or real(text))
    long_line = "data = [" + "1234, " * (3 * MAX_LINE_CHARS // 6) + "]"
    panel.editor.moveCursor(QTextCursor.MoveOperation.End)
    panel.editor.insertPlainText(long_line)  # what a paste does
    qtbot.keyClick(panel.editor, "x")
    qtbot.waitUntil(lambda: not highlighter.pending)
    block = panel.editor.document().lastBlock()
    assert len(block.text()) > MAX_LINE_CHARS
    assert block.layout().formats() == []  # shown plain
    qtbot.keyClick(panel.editor, Qt.Key.Key_Return)
    qtbot.keyClicks(panel.editor, "y = 1")
    qtbot.waitUntil(lambda: not highlighter.pending)
    assert lexed and max(lexed) <= MAX_LINE_CHARS  # the short line was lexed; the long one never


def test_quiz_mode_on_a_long_file_hides_nothing_and_keys_never_walk_its_lines(qtbot, monkeypatch):
    """Quiz hiding walked every line on each key (1 s a key in 200,000 lines) and turning it on
    highlighted the whole file at once; past QUIZ_MAX_LINES it hides nothing instead."""
    from gradviz.app.editor_limits import QUIZ_MAX_LINES
    from gradviz.app.panels.editor_panel import CodeEditor
    from gradviz.app.theme import ViewSettings

    view = ViewSettings()
    panel = EditorPanel(view=view)
    qtbot.addWidget(panel)
    panel.show()
    view.quiz = True
    walks = [0]
    real = CodeEditor._hide_lines
    monkeypatch.setattr(CodeEditor, "_hide_lines", lambda self, on: walks.__setitem__(0, walks[0] + 1) or real(self, on))
    text = "x = 1  # BUG: the answer\n" * (QUIZ_MAX_LINES + 1)
    panel.set_text(text)
    walks[0] = 0
    panel.editor.setFocus()
    qtbot.keyClicks(panel.editor, "y = 2")
    assert walks[0] == 0
    assert panel.editor.quiz_hidden_lines() == []
    assert panel.text().startswith("y = 2x = 1")


def test_a_document_of_more_lines_than_the_highlighter_takes_is_shown_plain_and_the_next_coloured(qtbot):
    from gradviz.app.editor_limits import MAX_HIGHLIGHT_LINES

    panel = EditorPanel()
    qtbot.addWidget(panel)
    highlighter = panel.editor.highlighter
    passes = [0]
    real = highlighter.highlightBlock
    highlighter.highlightBlock = lambda text: passes.__setitem__(0, passes[0] + 1) or real(text)
    panel.set_text("x = 1\n" * MAX_HIGHLIGHT_LINES)
    assert passes[0] == 0  # Qt did not call the highlighter once per line
    assert highlighter.document() is None
    panel.set_text("def f():\n    return 1\n")
    qtbot.waitUntil(lambda: panel.editor.document().firstBlock().layout().formats() != [])
    assert highlighter.document() is panel.editor.document()
    assert passes[0] > 0  # the count sees the highlighter's calls


def test_a_session_whose_code_has_a_ten_mib_line_is_refused(tmp_path):
    import json

    from bench.editor_files import long_line_text
    from gradviz.app.file_loading import LoadRefused, read_session

    path = tmp_path / "long.gradviz"
    path.write_text(
        json.dumps({"format": "gradviz-session", "version": 1, "code": "x = 1\n" + long_line_text(2**20)}),
        encoding="utf-8",
    )
    with pytest.raises(LoadRefused, match=f"line 2 is {2**20:,} characters long"):
        read_session(path)
