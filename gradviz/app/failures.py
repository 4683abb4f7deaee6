"""How a failed run is shown: the banner, the run bar's word, and the line marked in the editor.

Plain data from the worker's error dict (no Qt), so the rules are tested on their own. Errors
whose kind is ``in_user_code`` (the user's code failed, or its run timed out, was cancelled,
crashed or ran out of memory) mark the user's line when they are about the code in the editor.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradviz.schema.errors import ErrorKind, error_kind

TIMEOUT_ADVICE = " (Change the limit in the run bar's timeout box.)"
PROGRESS_WORDS = {ErrorKind.CANCELLED: "cancelled", ErrorKind.TIMEOUT: "timed out"}


@dataclass(frozen=True)
class FailureView:
    headline: str
    state: str  # the banner's style: "error", or "idle" for a cancel the user asked for
    details: str
    progress: str  # the run bar's word: "cancelled", "timed out" or "error"
    message: str  # the worker's message, as the editor shows it
    line: int | None  # the user's line to mark, when the error is in the editor's code
    traceback: str  # the user's frames, one per line
    mark_editor: bool
    reported: str | None  # the message for run_failed; None for a cancel


def describe_failure(error: dict, filename: str) -> FailureView:
    """The view of a failed run of the code the editor calls ``filename``."""
    kind, message = error_kind(error.get("kind")), error.get("message", "")
    line = error.get("lineno")
    mark = kind.in_user_code and error.get("filename") in (None, filename)
    traceback = "\n".join(f"  line {f['lineno']}, in {f['name']}: {f['line']}" for f in error.get("traceback") or [])
    common = {"progress": PROGRESS_WORDS.get(kind, "error"), "message": message, "line": line,
              "traceback": traceback, "mark_editor": mark}
    if kind == ErrorKind.CANCELLED:
        said = line or error.get("worker_replaced")  # a cancel the worker never answered says so
        return FailureView("Cancelled.", "idle", message if said else "", reported=None, **common)
    where = f" (line {line})" if line and kind.in_user_code else ""
    shown = message + (TIMEOUT_ADVICE if kind == ErrorKind.TIMEOUT else "")
    return FailureView(f"{kind.headline}{where}", "error", shown, reported=shown, **common)
