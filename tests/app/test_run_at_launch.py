"""At launch only a built-in example runs by itself. A file reopened from the last launch, a
session's code or text restored after a crash is shown and waits for Run: real second launches
of the real app, whose module code would leave a file behind if it ran."""

from __future__ import annotations

import json

import pytest

from tests.app.app_process import kill_9, lines, read_until, run_app, start_app, states

SETTLE_MS = "2500"  # long enough for a run at launch to have started


def evil(tmp_path, name: str = "downloaded.py"):
    """A file whose module code leaves ``ran`` behind when it runs."""
    sentinel = tmp_path / "ran"
    path = tmp_path / name
    path.write_text(f"open({str(sentinel)!r}, 'w').close()\n", encoding="utf-8")
    return path, sentinel


@pytest.mark.slow
def test_the_last_file_is_reopened_at_the_next_launch_and_waits_for_run(tmp_path):
    path, sentinel = evil(tmp_path)
    code, out = run_app(tmp_path, str(path), steps=["wait_saved", "state", "quit"])  # only opened, never run
    assert code == 0, out
    assert states(out)[-1]["path"] == str(path) and not lines(out, "RUN:")
    code, out = run_app(tmp_path, steps=["state", "run", "state", "quit"], CHILD_SETTLE_MS=SETTLE_MS)
    assert code == 0, out
    before, after = states(out)
    assert before["path"] == str(path) and before["text"] == path.read_text(encoding="utf-8")
    assert before["runs"] == []  # shown, not run
    assert after["runs"] == [str(path)] and sentinel.exists()  # Run runs it: the check above can fail


@pytest.mark.slow
def test_text_restored_after_a_kill_9_waits_for_run(tmp_path):
    sentinel = tmp_path / "ran"
    typed = f"open({str(sentinel)!r}, 'w').close()"
    child = start_app(tmp_path, steps=[f"type:\\n{typed}\\n", "wait_recovery", "hold"])
    try:
        read_until(child, "HOLDING")
    finally:
        kill_9(child.pid)
        child.wait(10)
    code, out = run_app(tmp_path, steps=["state", "run", "state", "quit"], CHILD_SETTLE_MS=SETTLE_MS)
    assert code == 0, out
    assert any("without saving your changes" in asked for asked in lines(out, "ASKED:"))
    before, after = states(out)
    assert typed in before["text"] and before["modified"]
    assert before["runs"] == []  # restored, shown, not run
    assert len(after["runs"]) == 1 and sentinel.exists()


def test_a_builtin_example_still_runs_at_launch(tmp_path):
    code, out = run_app(tmp_path, steps=["state", "quit"], CHILD_SETTLE_MS=SETTLE_MS)
    assert code == 0, out
    [state] = states(out)
    assert state["builtin"] == "linear" and len(state["runs"]) == 1


@pytest.mark.slow
def test_files_the_user_ran_may_run_at_launch_when_allowed_and_unchanged(tmp_path):
    path, sentinel = evil(tmp_path)
    code, out = run_app(tmp_path, str(path), steps=["run", "allow_known", "wait_saved", "quit"])
    assert code == 0, out
    sentinel.unlink()
    code, out = run_app(tmp_path, steps=["state", "quit"], CHILD_SETTLE_MS=SETTLE_MS)
    assert code == 0, out
    assert states(out)[0]["runs"] == [str(path)] and sentinel.exists()  # allowed, ran before, unchanged
    sentinel.unlink()
    path.write_text(path.read_text(encoding="utf-8") + "# changed since\n", encoding="utf-8")
    code, out = run_app(tmp_path, steps=["state", "quit"], CHILD_SETTLE_MS=SETTLE_MS)
    assert code == 0, out
    assert states(out)[0]["runs"] == [] and not sentinel.exists()  # changed since it ran: waits


@pytest.mark.slow
def test_run_at_launch_is_off_by_default(tmp_path):
    path, sentinel = evil(tmp_path)
    code, out = run_app(tmp_path, str(path), steps=["run", "wait_saved", "quit"])  # ran, but nothing allowed
    assert code == 0, out
    sentinel.unlink()
    code, out = run_app(tmp_path, steps=["state", "quit"], CHILD_SETTLE_MS=SETTLE_MS)
    assert code == 0, out
    assert states(out)[0]["runs"] == [] and not sentinel.exists()


def test_a_session_naming_a_builtin_with_other_code_does_not_count_as_the_builtin(qtbot, main_window, tmp_path):
    window = main_window
    path = tmp_path / "crafted.gradviz"
    path.write_text(json.dumps({"format": "gradviz-session", "version": 1, "code": "import os\n", "builtin": "linear"}))
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):
        window.open_session(path)
    assert window.document.builtin_name == "linear" and not window.source.may_run_at_launch()
    window.load_builtin("linear")
    assert window.source.may_run_at_launch()  # the shipped example, as shipped
