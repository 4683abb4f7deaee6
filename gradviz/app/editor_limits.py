"""How long a line the editor shows, and the refusal for a file with a longer one.

Qt lays out and paints a line whole: typing at the end of a 5,000-character line takes about
0.1 s a key, and in a 10 MiB line about 2 s (and opening it freezes the window for seconds), on
this project's two-core reference machine. Lines up to MAX_LINE_CHARS keep keys under 50 ms, so
a file (or session) with a longer one is refused when it is opened, with a sentence naming the
line; the command line still checks it. The highlighter leaves a longer line (pasted, say)
uncoloured rather than lexing it on every key. Quiz mode hides nothing in a document longer than
QUIZ_MAX_LINES (the buggy twins it is for are a few hundred lines), and a document of more than
MAX_HIGHLIGHT_LINES lines is shown uncoloured, which halves the time opening it holds the window.
"""

from __future__ import annotations

MAX_LINE_CHARS = 2000
# a longer document is shown uncoloured: Qt calls the highlighter once per line of a document
# just shown (2.5 us a line even when it only marks the line for later: 0.6 s of a 9 MB file)
MAX_HIGHLIGHT_LINES = 50_000
# quiz mode hides answers in documents up to this many lines: hiding walks every line on each key
# (5 us a line), and turning it on highlights the whole document at once (54 s for 200,000 lines)
QUIZ_MAX_LINES = 2000


def long_line(text: str) -> tuple[int, int] | None:
    """The 1-based number and the length of the first line longer than MAX_LINE_CHARS, or None."""
    if len(text) <= MAX_LINE_CHARS:
        return None
    lengths = list(map(len, text.split("\n")))
    if max(lengths) <= MAX_LINE_CHARS:
        return None
    number = next(k for k, length in enumerate(lengths) if length > MAX_LINE_CHARS)
    return number + 1, lengths[number]


def long_line_refusal(text: str, what: str) -> str | None:
    """The sentence refusing to show ``text`` (``what`` names it: "Cannot open x.py"), or None."""
    found = long_line(text)
    if found is None:
        return None
    number, length = found
    return (
        f"{what}: line {number} is {length:,} characters long; the editor shows lines of at most "
        f"{MAX_LINE_CHARS:,} characters. Break the line and open it again, or check it from a terminal "
        "with `gradviz check`."
    )


__all__ = ["MAX_HIGHLIGHT_LINES", "MAX_LINE_CHARS", "QUIZ_MAX_LINES", "long_line", "long_line_refusal"]
