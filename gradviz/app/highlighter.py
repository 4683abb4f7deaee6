"""Python highlighting for the editor, by Pygments.

The whole document is lexed at once (it is small: a Function or two) so multi-line strings
and docstrings come out right; each block then looks up its own spans.
"""

from __future__ import annotations

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


def _format_for(token_type) -> QTextCharFormat | None:
    while token_type is not Token:
        if token_type in STYLE:
            color, bold = STYLE[token_type]
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(color))
            if bold:
                fmt.setFontWeight(QFont.Weight.Bold)
            return fmt
        token_type = token_type.parent
    return None


class PythonHighlighter(QSyntaxHighlighter):
    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._lexer = PythonLexer(stripnl=False, ensurenl=False)
        self._spans: dict[int, list[tuple[int, int, QTextCharFormat]]] = {}
        self._formats: dict = {}
        self._source = None
        document.contentsChange.connect(self._on_contents_changed)
        self._relex()

    def _on_contents_changed(self, *_args) -> None:
        self._relex()

    def _relex(self) -> None:
        text = self.document().toPlainText()
        if text == self._source:
            return
        self._source = text
        spans: dict[int, list] = {}
        line, col = 0, 0
        for token_type, value in self._lexer.get_tokens(text):
            fmt = self._formats.get(token_type)
            if fmt is None and token_type not in self._formats:
                fmt = self._formats[token_type] = _format_for(token_type)
            for k, part in enumerate(value.split("\n")):
                if k:
                    line, col = line + 1, 0
                if fmt is not None and part:
                    spans.setdefault(line, []).append((col, len(part), fmt))
                col += len(part)
        self._spans = spans
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        for start, length, fmt in self._spans.get(self.currentBlock().blockNumber(), ()):
            self.setFormat(start, length, fmt)
