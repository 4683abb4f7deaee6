"""One error family, so every caller (CLI, worker, app) can show the same clear message.

Errors caused by the user's code carry the file and line to point at, and only the
user-code part of the traceback: PyTorch internals do not help someone fix a backward.
"""

from __future__ import annotations

import linecache
import re
from collections import deque
from collections.abc import Collection, Iterable, Iterator
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any

from gradviz.schema.units import format_bytes


class ErrorKind(StrEnum):
    """Every kind of error a front-end may be handed; the ``kind`` field of an error dict."""

    # the user's code failed: there is a file and usually a line to mark
    SYNTAX = "syntax"
    IMPORT = "import"
    NO_FUNCTION = "no_function"
    UNKNOWN_FUNCTION = "unknown_function"
    EXAMPLE_INPUTS = "example_inputs"
    FORWARD = "forward"
    BACKWARD = "backward"
    GRADIENT_COUNT = "gradient_count"
    GRADIENT_SHAPE = "gradient_shape"
    BAD_OUTPUT = "bad_output"
    # the run was stopped or died; the worker says where the user's code was
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    CRASHED = "crashed"
    OUT_OF_MEMORY = "out_of_memory"
    # refused before or instead of a verdict
    SETTINGS = "settings"
    SIZE_LIMIT = "size_limit"
    NOTHING_TO_CHECK = "nothing_to_check"
    SESSION = "session"
    IO = "io"
    OUTPUT = "output"
    # gradviz itself
    WORKER = "worker"  # the worker could not be started
    PROTOCOL = "protocol"  # a message that is not one
    INTERNAL = "internal"
    ERROR = "error"

    @property
    def in_user_code(self) -> bool:
        """An error whose line belongs in the user's editor."""
        return self in _USER_CODE or self in _RUN_STOPPED

    @property
    def headline(self) -> str:
        """A few words for a banner above the message."""
        if self in _USER_CODE:
            return "Your code failed"
        return _HEADLINES.get(self, "The run could not start")


_USER_CODE = {
    ErrorKind.SYNTAX,
    ErrorKind.IMPORT,
    ErrorKind.NO_FUNCTION,
    ErrorKind.UNKNOWN_FUNCTION,
    ErrorKind.EXAMPLE_INPUTS,
    ErrorKind.FORWARD,
    ErrorKind.BACKWARD,
    ErrorKind.GRADIENT_COUNT,
    ErrorKind.GRADIENT_SHAPE,
    ErrorKind.BAD_OUTPUT,
}
_RUN_STOPPED = {ErrorKind.TIMEOUT, ErrorKind.CANCELLED, ErrorKind.CRASHED, ErrorKind.OUT_OF_MEMORY}
_HEADLINES = {
    ErrorKind.TIMEOUT: "The run timed out",
    ErrorKind.CANCELLED: "Cancelled",
    ErrorKind.CRASHED: "The Function's code ended its process",
    ErrorKind.OUT_OF_MEMORY: "The run ran out of memory",
    ErrorKind.SETTINGS: "Bad settings",
    ErrorKind.SIZE_LIMIT: "Too large to check",
    ErrorKind.NOTHING_TO_CHECK: "Nothing to check",
    ErrorKind.PROTOCOL: "The worker sent something unreadable",
    ErrorKind.INTERNAL: "Internal error in gradviz",
}


def error_kind(value: object) -> ErrorKind:
    """The ErrorKind of a kind string from a message; unknown strings read as ERROR."""
    try:
        return ErrorKind(value) if isinstance(value, str) else ErrorKind.ERROR
    except ValueError:
        return ErrorKind.ERROR


class GradvizError(Exception):
    """Base of every error gradviz reports to a user (public as ``gradviz.GradvizError``).

    Attributes:
        message: the sentence shown to the user, saying what to do.
        kind: its ``ErrorKind`` (what ``{"error": {"kind": ...}}`` of ``--json`` says).
    """

    kind = ErrorKind.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "message": self.message}


class Cancelled(GradvizError):
    """The user (or a timeout) stopped the run between two chunks."""

    kind = ErrorKind.CANCELLED

    def __init__(self, message: str = "Cancelled.") -> None:
        super().__init__(message)


class SizeLimitError(GradvizError):
    """The Jacobians would not fit in the memory budget; refused before allocating."""

    kind = ErrorKind.SIZE_LIMIT


class SettingsError(GradvizError):
    """Bad settings (device, dtype, tolerances) rather than bad user code."""

    kind = ErrorKind.SETTINGS


@dataclass
class Frame:
    filename: str
    lineno: int
    name: str
    line: str


class UserCodeError(GradvizError):
    """Something in the user's code failed; ``lineno`` points at the line to look at.

    Public as ``gradviz.UserCodeError`` (and ``gradviz.testing.UserCodeError``): ``gradviz.check``
    raises it when the Function's forward or backward raises, chained to that exception
    (``__cause__``).

    Attributes:
        kind: one of the user-code kinds of ErrorKind (syntax ... bad_output).
        message: what failed, in one sentence.
        filename, lineno: the user's file and line to look at (lineno None when unknown).
        frames: the user's own stack frames, outermost first (``traceback_text`` formats them).
    """

    def __init__(
        self,
        kind: ErrorKind | str,
        message: str,
        filename: str = "<source>",
        lineno: int | None = None,
        frames: list[Frame] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.filename = filename
        self.lineno = lineno
        self.frames = frames or []

    def __str__(self) -> str:
        where = f"{self.filename}, line {self.lineno}" if self.lineno else self.filename
        return f"{self.message} ({where})"

    def traceback_text(self) -> str:
        """The user-code frames only, formatted like Python's own traceback."""
        lines = []
        for f in self.frames:
            lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
            if f.line:
                lines.append(f"    {f.line}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "filename": self.filename,
            "lineno": self.lineno,
            "traceback": [asdict(f) for f in self.frames],
        }


UserCodeError.__module__ = "gradviz"  # public as gradviz.UserCodeError: tracebacks show that name


# An error names the user's line; a runaway recursion must not make it a million lines long.
HEAD_FRAMES = 8  # outermost user frames kept
TAIL_FRAMES = 24  # innermost user frames kept
REPEATS_KEPT = 3  # copies of one frame kept in a row, as Python's own traceback does
MAX_DETAIL_CHARS = 2000  # of an exception's text in a message
MAX_LINE_CHARS = 300  # of a quoted source line

FrameKey = tuple[str, int, str]  # filename, line number, function name


def trim_frames(keys: Iterable[FrameKey]) -> tuple[list[FrameKey], str]:
    """Frames (outermost first) with repeats collapsed and the middle of a deep stack left out,
    read one at a time so a stack of any depth costs what is kept; and a note saying what went.

    A frame repeated in a row is kept REPEATS_KEPT times; then the first HEAD_FRAMES and the
    last TAIL_FRAMES of what is left.
    """
    head: list[FrameKey] = []
    tail: deque[FrameKey] = deque(maxlen=TAIL_FRAMES)
    omitted, run = 0, 0
    previous: FrameKey | None = None
    longest: tuple[FrameKey | None, int] = (None, 0)
    for key in keys:
        run = run + 1 if key == previous else 1
        previous = key
        if run > REPEATS_KEPT:
            if run - REPEATS_KEPT > longest[1]:
                longest = (key, run - REPEATS_KEPT)
            continue
        if len(head) < HEAD_FRAMES:
            head.append(key)
            continue
        omitted += len(tail) == TAIL_FRAMES
        tail.append(key)
    notes = []
    if longest[0] is not None:
        _, lineno, name = longest[0]
        notes.append(f"line {lineno}, in {name}, repeated {longest[1]:,} more times: endless recursion?")
    if omitted:
        notes.append(f"{omitted:,} more frames not shown")
    return [*head, *tail], "; ".join(notes)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters in all)"


def _tb_keys(tb: TracebackType | None, files: set[str]) -> Iterator[FrameKey]:
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            yield code.co_filename, tb.tb_lineno or 0, code.co_name
        tb = tb.tb_next


def user_frames_and_note(tb: TracebackType | None, filenames: str | Collection[str]) -> tuple[list[Frame], str]:
    """Frames of ``tb`` that belong to the user's file(s), outermost first, trimmed (see
    ``trim_frames``); and what the trimming left out, in words ("" when nothing)."""
    files = {filenames} if isinstance(filenames, str) else set(filenames)
    keys, note = trim_frames(_tb_keys(tb, files))
    frames = []
    for filename, lineno, name in keys:
        line = _short(linecache.getline(filename, lineno).strip(), MAX_LINE_CHARS)
        frames.append(Frame(filename, lineno, name, line))
    return frames, note


def user_frames(tb: TracebackType | None, filenames: str | Collection[str]) -> list[Frame]:
    """Frames of ``tb`` that belong to the user's file(s), outermost first (trimmed)."""
    return user_frames_and_note(tb, filenames)[0]


def from_exception(
    kind: str, exc: BaseException, filename: str, context: str, *, also: Collection[str] = ()
) -> UserCodeError:
    """Wrap an exception raised inside user code; ``context`` says what gradviz was doing.

    ``also`` names more files of the user's (the module an imported Function lives in); the
    error points at the innermost frame in any of them.
    """
    frames, note = user_frames_and_note(exc.__traceback__, {filename, *also})
    lineno = frames[-1].lineno if frames else None
    filename = frames[-1].filename if frames else filename
    memory = out_of_memory(exc)
    if memory and not _raised_in_user_code(exc.__traceback__, {filename, *also}):
        from gradviz.schema.machine import describe_limits

        message = (
            f"gradviz ran out of memory for its own arrays while {context} ran (not the Function's code): "
            f"{memory} {describe_limits()} A smaller --max-memory-mb (max_memory_mb) checks one this large by random projections instead."
        )
        return UserCodeError(ErrorKind.OUT_OF_MEMORY, message, filename)
    if memory:
        return UserCodeError(kind, f"{context} ran out of memory: {memory}", filename, lineno, frames)
    if isinstance(exc, SystemExit):
        detail = (
            f"sys.exit({_short(repr(exc.code), 200)}): the Function's code ended the process "
            "(gradviz stopped it there, so nothing was checked)"
        )
    else:
        detail = _short(f"{type(exc).__name__}: {_text_of(exc)}".strip().rstrip(":"), MAX_DETAIL_CHARS)
    message = f"{context} raised {detail}" + (f" ({note})" if note else "")
    return UserCodeError(kind, message, filename, lineno, frames)


_GRADVIZ_DIR = str(Path(__file__).resolve().parents[1])


def _raised_in_user_code(tb: TracebackType | None, files: Collection[str]) -> bool:
    """Whether the innermost frame that is the user's or gradviz's own is the user's: an
    allocation failing in gradviz's frames (its Jacobians, called from within a backward) is
    not the user's, one failing in their code or in a library they called is."""
    users = True  # nothing of gradviz's below: theirs
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name in files:
            users = True
        elif name.startswith(_GRADVIZ_DIR):
            users = False
        tb = tb.tb_next
    return users


def _text_of(exc: BaseException) -> str:
    """``str(exc)``, or a word on why not: user exceptions may have a ``__str__`` that fails."""
    try:
        return str(exc)
    except Exception as failure:
        return f"<str() of it raised {type(failure).__name__}>"


_CPU_ALLOC = re.compile(r"you tried to allocate (\d+) bytes")
_CUDA_ALLOC = re.compile(r"Tried to allocate ([\d.]+ [KMGTP]?i?B)")


def out_of_memory(exc: BaseException) -> str | None:
    """What an allocation failure tried to allocate, in words; None for other exceptions.

    Covers Python's MemoryError, torch's CPU allocator ("you tried to allocate N bytes") and
    torch.OutOfMemoryError on CUDA ("Tried to allocate 2.00 GiB").
    """
    text = _text_of(exc)
    cpu = _CPU_ALLOC.search(text)
    if cpu:
        n = int(cpu.group(1))
        return f"it tried to allocate {format_bytes(n)} ({n:,} bytes) at once, more than this machine can give."
    if type(exc).__name__ == "OutOfMemoryError" or "CUDA out of memory" in text:
        cuda = _CUDA_ALLOC.search(text)
        size = f"it tried to allocate {cuda.group(1)}" if cuda else "an allocation failed"
        return f"{size} on the GPU ({type(exc).__name__})."
    if isinstance(exc, MemoryError):
        detail = f": {text}" if text else ""
        return f"Python could not allocate the memory it asked for (MemoryError{detail})."
    return None
