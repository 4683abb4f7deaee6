"""The editor's highlighter lexes one line at a time; Pygments on the whole file is the oracle."""

from __future__ import annotations

import pytest
from pygments.lexers import PythonLexer
from pygments.token import String
from PySide6.QtCore import QElapsedTimer
from PySide6.QtGui import QTextCursor, QTextDocument

from gradviz.app.highlighter import PythonHighlighter, _format_for, open_triple_quote
from gradviz.app.panels.editor_panel import CodeEditor
from gradviz.schema.library import builtin_functions

MULTILINE = '''"""Module docstring,
over two lines."""
import torch

class Square(torch.autograd.Function):
    """A docstring
    with 'quotes' and # no comment
    """

    @staticmethod
    def forward(ctx, x):
        s = """a plain
        string""" + 'x'  # a comment
        t = \'\'\'one\'\'\'; u = "a \\" b"
        return x * x  # done
'''


def colours_by_pygments(text: str) -> list[list[str | None]]:
    """Each character's colour when Pygments lexes the whole text at once."""
    lines: list[list[str | None]] = [[]]
    for token_type, value in PythonLexer(stripnl=False, ensurenl=False).get_tokens(text):
        fmt = _format_for(token_type)
        colour = fmt.foreground().color().name() if fmt is not None else None
        for k, part in enumerate(value.split("\n")):
            if k:
                lines.append([])
            lines[-1].extend([colour] * len(part))
    return lines


def colours_shown(document: QTextDocument) -> list[list[str | None]]:
    """Each character's colour as the highlighter left it."""
    lines = []
    block = document.begin()
    while block.isValid():
        colours: list[str | None] = [None] * len(block.text())
        for span in block.layout().formats():
            brush = span.format.foreground()
            for k in range(span.start, min(span.start + span.length, len(colours))):
                colours[k] = brush.color().name() if brush.style() != brush.style().NoBrush else None
        lines.append(colours)
        block = block.next()
    return lines


def highlighted(qtbot, text: str) -> QTextDocument:
    """The text in the real editor, highlighted as it shows it."""
    editor = CodeEditor()
    qtbot.addWidget(editor)
    assert isinstance(editor.highlighter, PythonHighlighter)
    editor.setPlainText(text)
    qtbot.waitUntil(lambda: not editor.highlighter.pending)  # long files finish in slices
    document = editor.document()
    document.highlighter_pending = lambda: editor.highlighter.pending
    return document


@pytest.mark.parametrize("text", [MULTILINE, *(e.path.read_text(encoding="utf-8") for e in builtin_functions())],
                         ids=["multiline", *(e.name for e in builtin_functions())])
def test_line_by_line_colours_match_pygments_on_the_whole_file(qtbot, text):
    shown, expected = colours_shown(highlighted(qtbot, text)), colours_by_pygments(text)
    assert len(shown) >= len(expected) - 1
    for number, (mine, theirs) in enumerate(zip(shown, expected), 1):
        assert mine == theirs[: len(mine)], f"line {number}: {text.splitlines()[number - 1]!r}"


def test_opening_a_docstring_recolours_the_lines_below_and_closing_it_restores_them(qtbot):
    text = "def f():\n    x = 1\n    return x\n"
    document = highlighted(qtbot, text)
    cursor = QTextCursor(document.findBlockByNumber(1))
    cursor.insertText('"""')  # the rest of the file is now inside a string
    qtbot.waitUntil(lambda: not document.highlighter_pending())
    strings = {_format_for(t).foreground().color().name() for t in (String, String.Doc)}
    below = colours_shown(document)[1:]
    assert all(colour in strings for line in below for colour in line) and any(below)
    cursor.insertText('"""')  # closed again on the same line: back to code
    qtbot.waitUntil(lambda: not document.highlighter_pending())
    assert colours_shown(document) == colours_by_pygments(document.toPlainText())


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('x = """abc', (4, '"""')),
        ("x = '''abc''' + '''", (16, "'''")),
        ('x = "a \\"""" + 1', None),
        ('# """ in a comment', None),
        ("s = 'it''s'", None),
        ('"""one line"""', None),
        ('y = "\\\\" + """', (11, '"""')),
    ],
)
def test_where_a_triple_quoted_string_stays_open(line, expected):
    assert open_triple_quote(line) == expected


def test_a_long_file_never_holds_the_window_and_ends_up_fully_highlighted(qtbot):
    """10,000 lines: opening the file, and opening a docstring at its top (which recolours every
    line below), each hold the event loop for one slice; the rest follows in slices."""
    from bench.typing_latency import big_source

    text = big_source(10_000)
    editor = CodeEditor()
    qtbot.addWidget(editor)
    clock = QElapsedTimer()
    clock.start()
    editor.setPlainText(text)
    shown_in = clock.elapsed()
    assert editor.highlighter.pending  # not all at once
    qtbot.waitUntil(lambda: not editor.highlighter.pending, timeout=60_000)
    assert colours_shown(editor.document()) == colours_by_pygments(text)[: editor.document().blockCount()]
    end = QTextCursor(editor.document())
    end.movePosition(QTextCursor.MoveOperation.End)
    end.insertText('\n"""')  # pairs with the quote below, so no string is left open at the end
    qtbot.waitUntil(lambda: not editor.highlighter.pending, timeout=60_000)
    cursor = QTextCursor(editor.document().findBlockByNumber(1))
    clock.restart()
    cursor.insertText('"""')  # closes the first docstring: every string below turns to code and back
    keystroke = clock.elapsed()
    qtbot.waitUntil(lambda: not editor.highlighter.pending, timeout=60_000)
    assert colours_shown(editor.document()) == colours_by_pygments(editor.toPlainText())
    print(f"\nsetPlainText of 10,000 lines: {shown_in} ms; the keystroke that opened a docstring: {keystroke} ms")
    assert keystroke < 200  # a slice, not the 10,000 lines (0.7 s and more)
