"""The clicker's sequence, against a small fake window: run, worst cell, backward steps, next example."""

from __future__ import annotations

from gradviz.app.presenter import VIEWS, Presenter
from gradviz.app.theme import SCALES, Theme, ViewSettings


class FakeWindow:
    def __init__(self, *, failing: bool = True, steps: int = 3) -> None:
        self.names = ["a", "b", "c"]
        self.current = "a"
        self.busy = False
        self.shown = False  # a result of the editor's code is on screen
        self.failing = failing
        self.steps = steps
        self.step = -1
        self.view = "code"
        self.pages, self.page = 1, 0  # pages of code, the one shown
        self.log: list[str] = []

    def examples(self):
        return self.names

    def current_example(self):
        return self.current

    def load_example(self, name):
        self.current, self.shown, self.step = name, False, -1
        self.log.append(f"load {name}")

    def run(self):
        self.shown = True  # the fake's run finishes at once
        self.log.append("run")

    def running(self):
        return self.busy

    def result_current(self):
        return self.shown

    def result_failed(self):
        return self.failing

    def go_to_worst(self):
        self.log.append("worst")

    def backward_step(self):
        return self.step, self.steps

    def step_backward(self, delta):
        self.step = 0 if delta == 0 else self.step + delta
        self.log.append(f"step {self.step}")

    def scroll_code(self, pages):
        if self.view != "code" or not 0 <= self.page + pages < self.pages:
            return False
        self.page += pages
        self.log.append(f"page {self.page}")
        return True

    def current_view(self):
        return self.view

    def show_view(self, name):
        if name != self.view:
            self.view = name
            self.log.append(f"view {name}")


def test_forward_goes_code_jacobians_worst_cell_backward_steps_memory_next_example(qtbot):
    window = FakeWindow()
    presenter = Presenter(window)
    said = []
    presenter.acted.connect(said.append)
    for _ in range(7):
        presenter.advance()
    assert window.log == [
        "view jacobians", "run",  # from the code: run it, on the Jacobians
        "worst",
        "view backward", "step 0", "step 1", "step 2",
        "view memory",
        "load b", "view code",
    ]  # fmt: skip
    assert said == ["run", "worst cell", "backward step 1", "backward step 2", "backward step 3", "memory", "example b"]
    assert [window.view] == [VIEWS[0]]


def test_back_walks_the_views_back_and_before_the_code_the_previous_example(qtbot):
    window = FakeWindow(failing=False, steps=2)
    presenter = Presenter(window)
    for _ in range(4):
        presenter.advance()
    assert window.log == ["view jacobians", "run", "view backward", "step 0", "step 1", "view memory"]
    for _ in range(5):
        presenter.retreat()
    assert window.log[6:] == ["view backward", "step 0", "view jacobians", "view code", "load c"]


def test_nothing_happens_while_a_run_is_in_flight(qtbot):
    window = FakeWindow()
    window.busy = True
    assert Presenter(window).advance() == "running: wait for the result"
    assert window.log == []


def test_text_scale_steps_along_the_ladder_and_stops_at_its_ends(qtbot):
    view = ViewSettings()
    seen = []
    view.scale_changed.connect(seen.append)
    view.step_scale(1)
    view.step_scale(-1)
    view.step_scale(-1)
    assert seen == [1.15, 1.0, 0.9]
    view.scale = 100
    assert view.scale == SCALES[-1]
    assert Theme(2.0).pt(10) == 20 and Theme(0.5).pt(10) == 6  # never unreadably small


def test_the_clicker_pages_through_the_code_before_moving_on(qtbot):
    """A file longer than the code view: Page Down reads on to its end before running it, Page
    Up reads back to its top before the previous example (the view opens at the backward)."""
    window = FakeWindow(failing=False, steps=0)
    window.pages, window.page = 3, 1  # opened at the backward: one page above it, one below
    presenter = Presenter(window)
    assert presenter.advance() == "code: next page"
    assert presenter.advance() == "run"
    assert presenter.retreat() == "Code"
    assert [presenter.retreat() for _ in range(2)] == ["code: previous page", "code: previous page"]
    presenter.retreat()
    assert window.log == ["page 2", "view jacobians", "run", "view code", "page 1", "page 0", "load c"]
