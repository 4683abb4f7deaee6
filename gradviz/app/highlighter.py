"""Python highlighting for the editor, by Pygments.

The whole document is lexed at once (it is small: a Function or two) so multi-line strings
and docstrings come out right; each block then looks up its own spans. In quiz mode the
highlighter also knows what to hide: ``# BUG:`` comments and, in a file that has them (a buggy
twin), the docstrings that explain the bug.
"""

from __future__ import annotations

import re

from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Token
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

STYLE = {
    Keyword: ("#0033b3", True),
    Name.Builtin: ("#0033b3", False),
    Name.Function: ("#00627a", True),
    Name.Class: ("#00627a", True),
    Name.Decorator: ("#9e880d", False),
    String: ("#067d17", False),
    String.Doc: ("#5a7a5a", False),
    Number: ("#1750eb", False),
    Comment: ("#8c8c8c", False),
    Operator.Word: ("#0033b3", True),
}
HIGH_CONTRAST = {  # darker ink for a projector: nothing lighter than mid grey
    Keyword: ("#001a80", True),
    Name.Builtin: ("#001a80", False),
    Name.Function: ("#003d4d", True),
    Name.Class: ("#003d4d", True),
    Name.Decorator: ("#5c4f00", True),
    String: ("#004d0d", False),
    String.Doc: ("#2f4a2f", False),
    Number: ("#0a2a99", False),
    Comment: ("#4d4d4d", False),
    Operator.Word: ("#001a80", True),
}
BUG_COMMENT = re.compile(r"#\s*BUG\b")


def _format_for(token_type, style: dict = STYLE) -> QTextCharFormat | None:
    while token_type is not Token:
        if token_type in style:
            color, bold = style[token_type]
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(color))
            if bold:
                fmt.setFontWeight(QFont.Weight.Bold)
            return fmt
        token_type = token_type.parent
    return None


def _rest(line: str, parts: list[tuple[int, int]]) -> str:
    """What is left of ``line`` without the (start, length) parts."""
    return "".join(ch for k, ch in enumerate(line) if not any(s <= k < s + n for s, n in parts))


class PythonHighlighter(QSyntaxHighlighter):
    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._lexer = PythonLexer(stripnl=False, ensurenl=False)
        self._spans: dict[int, list[tuple[int, int, QTextCharFormat]]] = {}
        self._formats: dict = {}
        self._source = None
        self._style = STYLE
        self._hide = False
        self._hidden_spans: dict[int, list[tuple[int, int]]] = {}  # line -> (start, length) hidden in quiz mode
        self._hidden_lines: set[int] = set()  # lines that are nothing but what quiz mode hides
        self._invisible = QTextCharFormat()
        self._invisible.setForeground(QColor(0, 0, 0, 0))
        self._invisible.setFontPointSize(1)
        document.contentsChange.connect(self._on_contents_changed)
        self._relex()

    def _on_contents_changed(self, *_args) -> None:
        self._relex()

    def set_high_contrast(self, on: bool) -> None:
        style = HIGH_CONTRAST if on else STYLE
        if style is not self._style:
            self._style, self._formats, self._source = style, {}, None
            self._relex()

    def set_hidden(self, on: bool) -> None:
        """Quiz mode: draw what gives a buggy twin's answer away as nothing."""
        if on != self._hide:
            self._hide = on
            self.rehighlight()

    def hidden_lines(self) -> set[int]:
        """0-based lines that hold nothing but what quiz mode hides (the editor hides them whole)."""
        return set(self._hidden_lines)

    def _relex(self) -> None:
        text = self.document().toPlainText()
        if text == self._source:
            return
        self._source = text
        spans: dict[int, list] = {}
        hidden: dict[int, list[tuple[int, int]]] = {}
        twin = bool(re.search(r"^\s*BUG\s*=|#\s*BUG\b", text, re.MULTILINE))
        line, col = 0, 0
        for token_type, value in self._lexer.get_tokens(text):
            fmt = self._formats.get(token_type)
            if fmt is None and token_type not in self._formats:
                fmt = self._formats[token_type] = _format_for(token_type, self._style)
            answer = (token_type in Comment and BUG_COMMENT.match(value)) or (twin and token_type in String.Doc)
            for k, part in enumerate(value.split("\n")):
                if k:
                    line, col = line + 1, 0
                if fmt is not None and part:
                    spans.setdefault(line, []).append((col, len(part), fmt))
                if answer and part:
                    hidden.setdefault(line, []).append((col, len(part)))
                col += len(part)
        self._spans = spans
        self._hidden_spans = hidden
        lines = text.split("\n")
        self._hidden_lines = {n for n, parts in hidden.items() if n < len(lines) and not _rest(lines[n], parts).strip()}
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        number = self.currentBlock().blockNumber()
        for start, length, fmt in self._spans.get(number, ()):
            self.setFormat(start, length, fmt)
        if self._hide:
            for start, length in self._hidden_spans.get(number, ()):
                self.setFormat(start, length, self._invisible)
