"""ShownRun alone, without a window: what was asked, what is shown, and why the result on screen
is stale. The window's view of the editor is a plain snapshot the test changes; the run controller
that feeds it runs against the fake worker of test_run_controller."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gradviz.app.run_controller import RunController
from gradviz.app.state import RunSnapshot, ShownCheck, ShownRun
from tests.app.test_run_controller import FakeWorker, check

EDITOR = RunSnapshot(code="x = 1", function=None, settings=(("eps", 1e-6),), target=None, title="model.py")


class Window:
    """What the window shows now, and whether a check runs: the two things ShownRun reads."""

    def __init__(self) -> None:
        self.now: RunSnapshot | None = EDITOR
        self.busy = False


@pytest.fixture
def window():
    return Window()


@pytest.fixture
def shown(window):
    return ShownRun(lambda: window.now, lambda: window.busy)


def show(shown: ShownRun, request_id: int = 1, function: str = "Square") -> None:
    shown.note_sent(request_id, check())
    shown.note_shown(request_id, function)


def test_nothing_is_stale_before_a_result_is_shown(shown, window):
    assert shown.stale_reason() is None and not shown.is_current()
    window.busy = True
    assert shown.stale_reason() is None


def test_the_result_of_what_the_editor_holds_is_current(shown):
    show(shown)
    assert shown.shown == ShownCheck(EDITOR, "Square")
    assert shown.stale_reason() is None and shown.is_current()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"code": "x = 2"}, "From the previous run of Square: the code has changed since."),
        ({"settings": (("eps", 1e-3),)}, "From the previous run of Square, with other settings."),
        ({"title": "other.py"}, "From the previous run of Square in model.py: another file is in the editor."),
        ({"target": ("pkg.mod:Square", None)}, "another file is in the editor"),
    ],
)
def test_a_change_in_the_editor_makes_the_result_stale(shown, window, change, words):
    show(shown)
    window.now = replace(EDITOR, **change)
    assert words in shown.stale_reason() and not shown.is_current()


def test_choosing_another_function_than_the_one_checked_is_stale_but_choosing_one_after_none_is_not(shown, window):
    window.now = replace(EDITOR, function="Cube")
    shown.note_sent(1, check())
    shown.note_shown(1, "Cube")
    window.now = replace(EDITOR, function="Square")
    assert shown.stale_reason() is not None  # sent with Cube chosen, Square chosen now
    shown.note_sent(2, check())
    window.now = EDITOR
    shown.note_shown(2, "Square")
    window.now = replace(EDITOR, function="Square")
    assert shown.stale_reason() is None  # sent with none chosen: any choice shows the same result


def test_a_run_in_flight_comes_before_every_other_reason(shown, window):
    show(shown)
    window.now, window.busy = replace(EDITOR, code="changed"), True
    assert shown.stale_reason() == "From the previous run of Square: a new run is in flight."


def test_a_failed_run_leaves_the_older_result_stale_until_the_next_is_shown(shown):
    show(shown)
    shown.note_sent(2, check())
    shown.note_failed(2, error=True)
    assert shown.stale_reason() == "From the previous run of Square: the last run failed (see above)."
    show(shown, 3)
    assert shown.stale_reason() is None


def test_a_cancelled_run_is_no_failure(shown):
    show(shown)
    shown.note_sent(2, check())
    shown.note_failed(2, error=False)
    assert shown.stale_reason() is None


def test_a_dead_worker_forgets_every_check_in_flight(shown):
    shown.note_sent(1, check())
    shown.note_worker_died()
    shown.note_shown(1, "Square")  # an answer from before the crash: nothing known of what it was asked for
    assert shown.shown is None and shown.failed is False


def test_running_name_prefers_the_chosen_function_then_the_result_of_this_document(shown, window):
    assert shown.running_name() == "model.py"
    show(shown)
    assert shown.running_name() == "Square"
    window.now = replace(EDITOR, title="other.py")
    assert shown.running_name() == "other.py"
    window.now = replace(EDITOR, function="Cube", title="other.py")
    assert shown.running_name() == "Cube"


def test_without_a_window_nothing_is_stale_and_nothing_is_named():
    bare = ShownRun()
    show(bare)
    assert bare.shown is None and bare.stale_reason() is None and bare.running_name() == ""


def test_each_change_is_signalled(qtbot, shown):
    seen: list[str] = []
    shown.changed.connect(lambda: seen.append("changed"))
    shown.note_asked(check())
    assert seen == []  # asking changes nothing on screen: the check is not sent yet
    shown.note_sent(1, check())
    shown.note_shown(1, "Square")
    shown.note_failed(2, error=True)
    shown.note_worker_died()
    assert seen == ["changed"] * 4


def test_the_run_controller_feeds_it():
    worker, now = FakeWorker(ready=False), {"snapshot": EDITOR}
    controller = RunController(worker, now=lambda: now["snapshot"])
    shown = controller.shown
    first = check("x = 1")
    controller.run_check(first)  # waits for the worker
    assert shown.asked is first and shown.sent_request is None
    now["snapshot"] = replace(EDITOR, code="edited while the worker started")
    worker.start()
    assert shown.sent_request is first
    assert shown.stale_reason() is None  # nothing shown yet
    request = worker.answer()
    controller.note_shown(request, "Square")
    assert shown.shown == ShownCheck(now["snapshot"], "Square") and worker.discarded == [request]
    controller.run_check(check("x = 2"))
    assert "a new run is in flight" in shown.stale_reason()  # the controller's busy
    controller.note_failed(worker.fail(), error=True)
    assert "the last run failed" in shown.stale_reason()
