"""What the user's code was doing when its run was stopped or died, in words and with a line.

A run process writes Python stacks to a fault file: on a fatal signal (faulthandler), when the
worker asks with its dump signal (``worker.run.DUMP_SIGNAL``) just before it stops a hung or
cancelled run, and on ``os._exit``.
These functions read the user's frames out of such a dump and turn "timed out", "cancelled"
and "crashed" into error dicts that name the file and line, like any other user-code error.
"""

from __future__ import annotations

import os
import re
import signal
import stat
from pathlib import Path
from typing import Any

from gradviz.schema.errors import MAX_LINE_CHARS, ErrorKind, trim_frames
from gradviz.schema.requests import CodeSource

_FRAME = re.compile(r'File "(?P<file>.+?)", line (?P<line>\d+),? in (?P<name>\S+)')
_OS_EXIT = re.compile(r"gradviz: os\._exit\((.*?)\) called")
OS_EXIT_MARK = "gradviz: os._exit({code!r}) called\n"  # what a run process writes before os._exit

SIGNAL_MEANING = {
    "SIGSEGV": "a segmentation fault: C code read or wrote memory it does not own",
    "SIGBUS": "a bus error: C code read memory it does not own",
    "SIGABRT": "abort(): os.abort() or a failed assertion in C code",
    "SIGFPE": "a floating-point exception in C code",
    "SIGILL": "an illegal instruction",
    "SIGKILL": "SIGKILL: usually the system's out-of-memory killer",
    "SIGTERM": "SIGTERM: something asked it to stop",
}
ENDED = "the Function's code ended the process"


class UserSource:
    """The user's file name and text, to quote the lines a stack dump points at."""

    def __init__(self, filename: str | None, text: str | None = None) -> None:
        self.filename = filename
        self._lines = text.splitlines() if text is not None else None

    @classmethod
    def of_code(cls, code: CodeSource | None) -> UserSource:
        """The code a request runs: a file by path, or editor text under a name (None: no code)."""
        if code is None:
            return cls("<editor>")
        if code.path:
            return cls(str(Path(code.path).resolve()))
        return cls(code.filename or "<editor>", code.source)

    def line(self, number: int) -> str:
        if self._lines is None and self.filename and not self.filename.startswith("<"):
            self._lines = _read_regular(self.filename).splitlines()
        lines = self._lines or []
        line = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def _read_regular(filename: str, limit: int = 32 * 2**20) -> str:
    """The text of a regular file of at most ``limit`` bytes, else "": the worker reads the user's
    file to quote a line, and a FIFO put in its place must not block the worker."""
    try:
        fd = os.open(filename, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return ""
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def user_frames_from_dump(text: str, source: UserSource) -> list[dict[str, Any]]:
    """Frames of the user's file in a faulthandler dump, outermost first, like a traceback."""
    return _frames_and_note(text, source)[0]


def _frames_and_note(text: str, source: UserSource) -> tuple[list[dict[str, Any]], str]:
    """The user's frames in a dump (repeats collapsed, as ``schema.errors.trim_frames`` does) and
    a note on what was collapsed: a stack overflow from endless recursion is a dump of one line
    a hundred times.

    faulthandler lists the most recent call first and, with several threads, the current
    (or first) thread's block first; only that block is read.
    """
    if not source.filename or not text:
        return [], ""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    current = [b for b in blocks if b.lstrip().startswith("Current thread")]
    for block in current or blocks:
        found = [m for m in _FRAME.finditer(block) if m.group("file") == source.filename]
        if found:
            keys, note = trim_frames((source.filename, int(m.group("line")), m.group("name")) for m in reversed(found))
            frames = [
                {"filename": filename, "lineno": lineno, "name": name, "line": source.line(lineno)}
                for filename, lineno, name in keys
            ]
            return frames, note
    return [], ""


def _where(dump: str, source: UserSource) -> tuple[dict[str, Any], str]:
    """Error fields naming the innermost user frame, and a phrase for the message."""
    frames, note = _frames_and_note(dump, source)
    if not frames:
        return {"filename": source.filename, "lineno": None, "traceback": []}, ""
    last = _running_frame(frames, source)
    fields = {"filename": source.filename, "lineno": last["lineno"], "traceback": frames}
    at = f"line {last['lineno']}, in {last['name']}"
    note = note.removeprefix(f"{at}, ")  # "repeated 97 more times": the line it was at
    return fields, f" It was at {at}" + (f" ({note})." if note else ".")


def _running_frame(frames: list[dict[str, Any]], source: UserSource) -> dict[str, Any]:
    """The innermost frame that was running a line of the user's code.

    A frame at its ``def`` line had only been entered: endless recursion through C code overflows
    the stack while entering the next call or while running the line that makes it, whichever
    comes first. When such a frame is a call of the function in the frame before it, that frame's
    line is the one that recursed, so the error names the same line either way.
    """
    last = frames[-1]
    if len(frames) > 1 and frames[-2]["name"] == last["name"] and _is_def_line(source.line(last["lineno"])):
        return frames[-2]
    return last


def _is_def_line(text: str) -> bool:
    return text.startswith(("def ", "async def ", "@"))


def timeout_error(seconds: float, dump: str, source: UserSource) -> dict[str, Any]:
    fields, where = _where(dump, source)
    message = (
        f"The Function's code did not finish within {seconds:g} s; an endless loop in forward or "
        f"backward? gradviz stopped the process running it.{where}"
    )
    return {"kind": ErrorKind.TIMEOUT.value, "message": message, **fields}


def cancelled_error(dump: str, source: UserSource) -> dict[str, Any]:
    fields, where = _where(dump, source)
    return {"kind": ErrorKind.CANCELLED.value, "message": f"Cancelled.{where}", **fields}


def out_of_memory_error(limit_text: str, dump: str, source: UserSource) -> dict[str, Any]:
    fields, where = _where(dump, source)
    at = f" at line {fields['lineno']}" if fields["lineno"] else ""
    message = (
        f"The run ran out of memory{at}: it used more than the worker's limit of {limit_text}, so gradviz "
        f"stopped it before the system had to.{where} Shrink the inputs, or raise the limit."
    )
    return {"kind": ErrorKind.OUT_OF_MEMORY.value, "message": message, **fields}


def crash_error(returncode: int | None, dump: str, source: UserSource) -> dict[str, Any]:
    """A run process that ended without answering: how it ended, and where, when known."""
    fields, where = _where(dump, source)
    called = _OS_EXIT.search(dump)
    if called:
        how = f"it called os._exit({called.group(1)})"
    elif returncode is not None and returncode < 0:
        name = signal_name(-returncode)
        how = f"the process was killed by {name} ({SIGNAL_MEANING.get(name, 'a fatal signal')})"
    elif returncode is not None:
        how = f"the process exited with code {returncode} (os._exit, or a C library calling exit()?)"
    else:
        how = "the process stopped answering"
    message = f"Nothing was checked: {ENDED}; {how}.{where}"
    return {"kind": ErrorKind.CRASHED.value, "message": message, **fields}


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
