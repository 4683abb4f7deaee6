"""A file's text as the editor holds it, and back, without changing a character the user did not
edit.

Qt's text document splits blocks at ``\\n``, ``\\r``, ``\\r\\n``, U+2029 and its two frame marks
(U+FDD0, U+FDD1), and ``toPlainText`` turns U+00A0 into a space and U+2028 into ``\\n``. So a
file's text is shown split only at its own line ending (the first one it uses: ``\\r\\n``,
``\\n`` or ``\\r``), every other character Qt would split at is held as a private-use character
that the file does not contain, and the text is read back from the document's raw text
(``toRawText``: every character as it is) with the block breaks written as that line ending and
each private-use stand-in turned back into its character. A leading BOM is kept aside and
written back in front. Nothing here imports Qt: the editor panel does the Qt side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BOM = "\ufeff"
BLOCK_BREAK = "\u2029"  # how QTextDocument's raw text separates blocks
SPLIT_BY_QT = ("\r", "\n", "\u2029", "\ufdd0", "\ufdd1")  # characters Qt would take as a block break
FIRST_STAND_IN = 0xF0000  # the supplementary private-use area: no font or file uses it by chance
NEWLINES = ("\r\n", "\n", "\r")


@dataclass(frozen=True)
class TextForm:
    """How a file writes its text: BOM or none, its line ending, and the stand-ins the editor
    shows for the characters Qt would otherwise change (character -> stand-in)."""

    bom: bool = False
    newline: str = "\n"
    stand_ins: tuple[tuple[str, str], ...] = field(default=())

    def describe(self) -> str:
        """A few words for the status line: "CRLF, BOM"."""
        ending = {"\r\n": "CRLF", "\n": "LF", "\r": "CR"}[self.newline]
        return ending + (", BOM" if self.bom else "")


def newline_of(text: str) -> str:
    """The line ending the text uses first (``\\n`` for a text of one line)."""
    for k, char in enumerate(text):
        if char == "\n":
            return "\n"
        if char == "\r":
            return "\r\n" if text.startswith("\n", k + 1) else "\r"
    return "\n"


def to_editor(text: str) -> tuple[str, TextForm]:
    """The text to hand ``setPlainText`` (lines joined by ``\\n``, nothing Qt would change), and
    the form that turns the editor's raw text back into exactly ``text``."""
    bom = text.startswith(BOM)
    body = text[1:] if bom else text
    newline = newline_of(body)
    lines = body.split(newline)
    odd = [char for char in SPLIT_BY_QT if any(char in line for line in lines)] if _has_odd(body, newline) else []
    stand_ins: list[tuple[str, str]] = []
    code = FIRST_STAND_IN
    for char in odd:
        while chr(code) in body:
            code += 1
        stand_ins.append((char, chr(code)))
        code += 1
    for char, stand_in in stand_ins:
        lines = [line.replace(char, stand_in) for line in lines]
    return "\n".join(lines), TextForm(bom, newline, tuple(stand_ins))


def _has_odd(body: str, newline: str) -> bool:
    """Whether the text holds a character Qt splits at other than its own line endings (a quick
    count: most files have none, and then no line is looked at)."""
    if any(char in body for char in ("\u2029", "\ufdd0", "\ufdd1")):
        return True
    if newline == "\r\n":
        crlf = body.count("\r\n")
        return body.count("\r") != crlf or body.count("\n") != crlf
    other = "\r" if newline == "\n" else "\n"
    return other in body


def from_editor(raw: str, form: TextForm) -> str:
    """The file's text (without the BOM) from the document's raw text."""
    text = raw.replace(BLOCK_BREAK, form.newline)
    for char, stand_in in form.stand_ins:
        if stand_in in text:
            text = text.replace(stand_in, char)
    return text


def file_text(text: str, form: TextForm) -> str:
    """What Save writes (as UTF-8): the BOM, if the file had one, then the text."""
    return BOM + text if form.bom else text


__all__ = ["BOM", "TextForm", "file_text", "from_editor", "newline_of", "to_editor"]
