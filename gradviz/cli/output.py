"""What the CLI prints: the verdict on stdout, errors on stderr (and as a JSON document with
``--json``), the user's frames of a traceback. A closed or full stdout is an error, never a pass."""

from __future__ import annotations

import contextlib
import sys

from gradviz.cli.contract import error_document

MAX_TRACEBACK_FRAMES = 12  # a RecursionError has a thousand identical frames: show both ends


def stdout_usable(as_json: bool) -> bool:
    """A closed stdout cannot carry a verdict: say so before doing any work."""
    if sys.stdout is None:
        print_error("output", "Standard output is closed, so the verdict cannot be printed.", "", False, None)
        return False
    return True


def write_stdout(text: str) -> bool:
    """Print the verdict; a full or broken stdout is an error (exit 2), never a silent pass."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout = None  # nothing more to flush at exit
        print_error("output", f"Cannot write the result to standard output: {reason}.", "", False, None)
        return False
    return True


def report_worker_error(error: dict, as_json: bool, target: str | None = None) -> None:
    """A worker error as the in-process CLI printed it: message, where, the user's frames; with
    several targets, ``target`` names the one it belongs to."""
    message = error.get("message", "")
    if "filename" in error:  # errors in the user's code: where, and their frames only
        where = f"{error['filename']}, line {error['lineno']}" if error.get("lineno") else error["filename"]
        text = f"{message} ({where})" if where and where not in message else message
        print_error(error["kind"], text, frames_text(error.get("traceback") or []), as_json, error, target)
    else:
        print_error(error.get("kind", "error"), message, "", as_json, error, target)


def frames_text(frames: list[dict]) -> str:
    """The user's frames as Python prints them, the middle of a long recursion left out."""
    if len(frames) > MAX_TRACEBACK_FRAMES:
        half = MAX_TRACEBACK_FRAMES // 2
        skipped = len(frames) - 2 * half
        frames = [*frames[:half], {"skipped": skipped}, *frames[-half:]]
    lines = []
    for f in frames:
        if "skipped" in f:
            lines.append(f"  [... {f['skipped']} more frames ...]")
            continue
        lines.append(f'  File "{f["filename"]}", line {f["lineno"]}, in {f["name"]}')
        if f.get("line"):
            lines.append(f"    {f['line']}")
    return "\n".join(lines)


def print_error(
    kind: str, message: str, user_traceback: str, as_json: bool, detail: dict | None, target: str | None = None
) -> None:
    """One ``gradviz: error:`` line on stderr; with ``--json`` the error document on stdout too.
    ``target`` (several targets in one call) is named on the line and in the document."""
    print(f"gradviz: error: {target}: {message}" if target else f"gradviz: error: {message}", file=sys.stderr)
    if user_traceback:
        print("Traceback (your code only):", file=sys.stderr)
        print(user_traceback, file=sys.stderr)
    if as_json:
        print(error_document(detail or {"kind": kind, "message": message}, target))
