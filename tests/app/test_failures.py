"""How failed runs are shown, from the worker's error dicts alone (no Qt)."""

from __future__ import annotations

import pytest

from gradviz.app.failures import TIMEOUT_ADVICE, describe_failure
from gradviz.schema.errors import ErrorKind

FRAMES = [{"lineno": 12, "name": "backward", "line": "return g * w"}]


def error(kind: ErrorKind, *, line: int | None = 12, filename: str | None = "<editor>", **extra) -> dict:
    return {"kind": kind.value, "message": f"{kind.value} happened", "lineno": line, "filename": filename,
            "traceback": FRAMES, **extra}


def test_an_error_in_the_user_s_code_marks_the_line_and_names_it():
    view = describe_failure(error(ErrorKind.BACKWARD), "<editor>")
    assert view.headline == "Your code failed (line 12)" and view.state == "error"
    assert view.mark_editor and view.line == 12 and view.message == "backward happened"
    assert view.traceback == "  line 12, in backward: return g * w"
    assert view.progress == "error" and view.reported == view.details == "backward happened"


@pytest.mark.parametrize(
    ("kind", "headline", "progress"),
    [
        (ErrorKind.TIMEOUT, "The run timed out (line 12)", "timed out"),
        (ErrorKind.CRASHED, "The Function's code ended its process (line 12)", "error"),
        (ErrorKind.OUT_OF_MEMORY, "The run ran out of memory (line 12)", "error"),
    ],
)
def test_a_stopped_run_marks_the_line_it_was_on(kind, headline, progress):
    view = describe_failure(error(kind), "<editor>")
    assert view.headline == headline and view.progress == progress
    assert view.mark_editor and view.line == 12


def test_a_timeout_says_where_to_change_the_limit():
    view = describe_failure(error(ErrorKind.TIMEOUT), "<editor>")
    assert view.details.endswith(TIMEOUT_ADVICE) and view.reported == view.details
    assert view.message == "timeout happened"  # the editor shows the worker's words alone


def test_a_cancel_is_quiet_and_says_where_the_code_was():
    view = describe_failure(error(ErrorKind.CANCELLED), "<editor>")
    assert (view.headline, view.state, view.progress) == ("Cancelled.", "idle", "cancelled")
    assert view.details == "cancelled happened" and view.mark_editor and view.reported is None
    early = describe_failure(error(ErrorKind.CANCELLED, line=None), "<editor>")
    assert early.details == "" and early.line is None


def test_an_error_in_another_file_marks_nothing_in_the_editor():
    view = describe_failure(error(ErrorKind.FORWARD, filename="/elsewhere/ops.py"), "<editor>")
    assert not view.mark_editor and view.headline == "Your code failed (line 12)"
    assert describe_failure(error(ErrorKind.FORWARD, filename=None), "/home/me/f.py").mark_editor


def test_errors_not_in_user_code_name_no_line():
    view = describe_failure(error(ErrorKind.SETTINGS), "<editor>")
    assert view.headline == "Bad settings" and not view.mark_editor
    io = describe_failure({"kind": "io", "message": "Could not read the result files"}, "<editor>")
    assert io.headline == "The run could not start" and io.reported == "Could not read the result files"
    unknown = describe_failure({"kind": "martian"}, "<editor>")
    assert unknown.state == "error" and unknown.message == "" and not unknown.mark_editor
