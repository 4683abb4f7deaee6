"""The editor's code at one revision, compared without copying it out of the editor.

The window asks "is the result on screen of the code in the editor?" after every key. Reading
a 9 MB document out of Qt costs tens of milliseconds, so a version holds the document's revision
(Qt raises it with every edit, undo and redo included, and never lowers it) and its length, and
reads the text only when neither settles the question: two versions of one document at the same
revision hold the same text, two of different lengths differ, and only versions of equal length
at different revisions (an edit undone by hand, a character replaced) are compared by text.
"""

from __future__ import annotations

from collections.abc import Callable


class CodeVersion:
    """The code of one document (``source``: any object naming it) at ``revision``."""

    __slots__ = ("_blank", "_read", "_text", "length", "revision", "source")

    def __init__(
        self, source: object, revision: int, length: int, read: Callable[[], str],
        blank: Callable[[], bool] | None = None,
    ) -> None:  # fmt: skip
        """``length``: the document's length in characters; ``read()``: its text, valid only
        while the document is still at ``revision`` (``frozen`` reads it while it is);
        ``blank()``: whether it holds only white space, answered without reading it all."""
        self.source, self.revision, self.length = source, revision, length
        self._read: Callable[[], str] | None = read
        self._text: str | None = None
        self._blank = blank

    @classmethod
    def of_text(cls, text: str) -> CodeVersion:
        """A version that is just this text (no editor behind it)."""
        version = cls(None, -1, -1, lambda: text)
        version._text = text
        return version

    @property
    def text(self) -> str:
        """The code, read from the editor on first use (one copy)."""
        if self._text is None:
            assert self._read is not None
            self._text = self._read()
            self._read = None
        return self._text

    def is_blank(self) -> bool:
        """Whether there is no code at all, only white space."""
        if self._text is None and self._blank is not None:
            return self._blank()
        return not self.text.strip()

    def frozen(self) -> CodeVersion:
        """This version with its text read now: to keep after the editor moves on."""
        _ = self.text
        self._blank = None
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.text == other
        if not isinstance(other, CodeVersion):
            return NotImplemented
        if self.source is not None and self.source is other.source:
            if self.revision == other.revision:
                return True
            if self.length != other.length:
                return False
        return self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"CodeVersion(revision={self.revision}, length={self.length})"


__all__ = ["CodeVersion"]
