"""Python highlighting for the editor, by Pygments, one line at a time.

Each line is lexed on its own when it changes, so a keystroke costs one line's lexing whatever
the file's length (lexing a 10,000-line file whole takes half a second). The one construct that
spans lines, a triple-quoted string, is carried from line to line as the block state:
QSyntaxHighlighter re-highlights the following lines only while their state changes.

Highlighting never holds the window for long: once a pass (a keystroke that opens a docstring
above 10,000 lines, a file just opened) has spent BUDGET_S, the lines it has not reached are
marked PENDING and finished in slices of the same size from the event loop.

A line longer than MAX_LINE_CHARS (pasted, say: a file with one is refused when opened) is left
uncoloured and ends any string it is in: lexing a 10 MiB line took seconds on every key.

In presentation mode the colours come from HIGH_CONTRAST; in quiz mode the highlighter also draws
as nothing what gives a buggy twin's answer away: ``# BUG:`` comments and, in a file that has
them, the docstrings that explain the bug.
"""

from __future__ import annotations

import re
import time

from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Token
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

from gradviz.app.editor_limits import MAX_LINE_CHARS

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
TWIN_MARK = re.compile(r"^\s*BUG\s*=|#\s*BUG\b", re.MULTILINE)  # a buggy twin says where its bug is

BUDGET_S = 0.006  # the most one pass (or one slice) highlights before the rest waits for the event loop
PENDING = -2  # block state of a line not highlighted yet
# block states: the triple-quoted string a line leaves open (QSyntaxHighlighter's -1: none)
OPEN_STRINGS = {1: ('"""', False), 2: ("'''", False), 3: ('"""', True), 4: ("'''", True)}  # (quote, docstring)
_STATE_OF = {value: state for state, value in OPEN_STRINGS.items()}
_QUOTE_OR_COMMENT = re.compile(r"[#\"']")
_DOCSTRING_START = re.compile(r"\s*[rRuUbB]{0,2}")


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


def closing_quote(line: str, start: int, quote: str) -> int:
    """Where ``quote`` closes the string that runs from ``start`` (a backslash escapes it), or -1."""
    k = start
    while (j := line.find(quote, k)) >= 0:
        backslashes = (j - k) - len(line[k:j].rstrip("\\"))
        if backslashes % 2 == 0:
            return j
        k = j + 1
    return -1


def open_triple_quote(line: str, start: int = 0) -> tuple[int, str] | None:
    """Where a triple-quoted string opens on ``line`` after ``start`` and is still open at the
    line's end, and its quote; None when the line ends outside any string."""
    k = start
    while (match := _QUOTE_OR_COMMENT.search(line, k)) is not None:
        k = match.start()
        if line[k] == "#":
            return None
        quote = line[k : k + 3] if line[k : k + 3] in ('"""', "'''") else line[k]
        end = closing_quote(line, k + len(quote), quote)
        if end < 0:
            return (k, quote) if len(quote) == 3 else None  # an open '...' is an error, not a state
        k = end + len(quote)
    return None


class PythonHighlighter(QSyntaxHighlighter):
    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._lexer = PythonLexer(stripnl=False, ensurenl=False)
        self._formats: dict = {}
        self._pass_started: float | None = None  # when the current pass began (None: between passes)
        self._spent = False  # the current pass is out of time: its remaining lines are PENDING
        self._pending_from: int | None = None  # the first line that may be PENDING
        self._style = STYLE
        self._hide = False  # quiz mode
        self._unbounded = False  # a pass that must finish now (quiz mode's hidden lines)
        self._twin = False  # the document marks its bug (BUG = ... or # BUG:): its docstrings tell it
        self._hidden_lines: set[int] = set()  # lines that are nothing but what quiz mode hides
        self._line_hidden: list[tuple[int, int]] = []  # the line being highlighted: spans hidden
        self._invisible = QTextCharFormat()
        self._invisible.setForeground(QColor(0, 0, 0, 0))
        self._invisible.setFontPointSize(1)

    def set_high_contrast(self, on: bool) -> None:
        style = HIGH_CONTRAST if on else STYLE
        if style is not self._style:
            self._style, self._formats = style, {}
            self.rehighlight()

    def set_hidden(self, on: bool) -> None:
        """Quiz mode: draw what gives a buggy twin's answer away as nothing."""
        if on != self._hide:
            self._hide = on
            self._twin = on and TWIN_MARK.search(self.document().toPlainText()) is not None
            self._hidden_lines.clear()
            # one whole pass, not sliced: the editor reads hidden_lines() right after this call
            # (showing everything again needs no such list: that pass is sliced as usual)
            self._unbounded = on
            try:
                self.rehighlight()
            finally:
                self._unbounded = False

    def hidden_lines(self) -> set[int]:
        """0-based lines that hold nothing but what quiz mode hides (the editor hides them whole)."""
        return set(self._hidden_lines)

    @property
    def pending(self) -> bool:
        """Lines wait to be highlighted (tests wait for False)."""
        return self._pending_from is not None

    def _end_pass(self) -> None:
        self._pass_started = None
        self._spent = False
        if self._pending_from is not None:
            self._continue()

    def _continue(self) -> None:
        """Highlight the next slice of PENDING lines (a pass of its own, within BUDGET_S)."""
        if self._pass_started is not None:
            return  # a pass is running: it ends with _end_pass, which comes back here
        document = self.document()
        block = document.findBlockByNumber(self._pending_from) if document is not None else None
        while block is not None and block.isValid() and block.userState() != PENDING:
            block = block.next()
        if block is None or not block.isValid():
            self._pending_from = None
            return
        self._pending_from = block.blockNumber()
        self.rehighlightBlock(block)  # goes on down the file while states change, within the budget

    def _format(self, token_type) -> QTextCharFormat | None:
        if token_type not in self._formats:
            self._formats[token_type] = _format_for(token_type, self._style)
        return self._formats[token_type]

    def _paint(self, start: int, length: int, token_type, value: str = "") -> None:
        fmt = self._format(token_type)
        if fmt is not None and length:
            self.setFormat(start, length, fmt)
        if self._hide and length and (
            (token_type in Comment and BUG_COMMENT.match(value)) or (self._twin and token_type in String.Doc)
        ):
            self._line_hidden.append((start, length))

    def highlightBlock(self, text: str) -> None:
        if self._spent and not self._unbounded:  # the rest of an opened file: as little as can be per line
            self.setCurrentBlockState(PENDING)
            return
        self._line_hidden = []
        self._highlight(text)
        if not self._hide:
            return
        for start, length in self._line_hidden:
            self.setFormat(start, length, self._invisible)
        number = self.currentBlock().blockNumber()
        if self._line_hidden and not _rest(text, self._line_hidden).strip():
            self._hidden_lines.add(number)
        else:
            self._hidden_lines.discard(number)

    def _highlight(self, text: str) -> None:
        now = time.perf_counter()
        if self._pass_started is None:  # a new pass: it ends when control is back in the event loop
            self._pass_started = now
            QTimer.singleShot(0, self, self._end_pass)  # dropped if the highlighter is deleted first
        elif not self._unbounded and now - self._pass_started > BUDGET_S:  # out of time: this line waits for a later slice
            self.setCurrentBlockState(PENDING)
            number = self.currentBlock().blockNumber()
            self._pending_from = number if self._pending_from is None else min(self._pending_from, number)
            self._spent = True  # every later line of this pass waits too (Qt goes on to the end)
            return
        if len(text) > MAX_LINE_CHARS:  # too long to lex on every key: shown plain
            self.setCurrentBlockState(-1)
            return
        start = 0
        carried = OPEN_STRINGS.get(self.previousBlockState())
        if carried is not None:  # the line starts inside a triple-quoted string
            quote, doc = carried
            end = closing_quote(text, 0, quote)
            kind = String.Doc if doc else String
            if end < 0:
                self._paint(0, len(text), kind)
                self.setCurrentBlockState(_STATE_OF[carried])
                return
            start = end + len(quote)
            self._paint(0, start, kind)
        for index, token_type, value in self._lexer.get_tokens_unprocessed(text[start:]):
            self._paint(start + index, len(value), token_type, value)
        opened = open_triple_quote(text, start)
        if opened is None:
            self.setCurrentBlockState(-1)
            return
        k, quote = opened
        doc = start == 0 and _DOCSTRING_START.fullmatch(text[:k]) is not None
        self._paint(k, len(text) - k, String.Doc if doc else String)
        self.setCurrentBlockState(_STATE_OF[(quote, doc)])
