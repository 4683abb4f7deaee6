"""What a presenter's clicker does: one key forward, one key back through a lecture, one view at
a time (presentation mode shows one of VIEWS full screen: the code, the Jacobians, the backward
step-through, the memory study).

Forward: from the code, a page further down while there is one (the code view opens at the
backward), then run it and show the Jacobians; there, go to the worst cell (when it
fails); then the backward step-through, one node a key; then the memory study; then the next
built-in example's code. Back walks the same way back; in the code, a page up while there is one, then the previous
example.

The presenter only decides; the window acts (``PresenterWindow``), so the sequence is tested
with a small fake window.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, Signal

VIEWS = ("code", "jacobians", "backward", "memory")  # the order a lecture goes through them
VIEW_TITLES = {"code": "Code", "jacobians": "Jacobians", "backward": "Backward", "memory": "Memory"}


class PresenterWindow(Protocol):
    def examples(self) -> list[str]: ...
    def current_example(self) -> str | None: ...
    def load_example(self, name: str) -> None: ...
    def run(self) -> None: ...
    def running(self) -> bool: ...
    def result_current(self) -> bool: ...  # a result of the code in the editor is on screen
    def result_failed(self) -> bool: ...
    def go_to_worst(self) -> None: ...
    def backward_step(self) -> tuple[int, int]: ...  # (step shown, steps); step -1 before the walk
    def step_backward(self, delta: int) -> None: ...  # delta 0: the first step
    def scroll_code(self, pages: int) -> bool: ...  # a page on (1) or back (-1) in the code; False at its end
    def current_view(self) -> str: ...  # one of VIEWS
    def show_view(self, name: str) -> None: ...


class Presenter(QObject):
    acted = Signal(str)  # what the last key did, in words (the status bar says it)

    def __init__(self, window: PresenterWindow, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self._worst_shown = False
        self._walking = False

    def reset(self) -> None:
        """A new document or result: the sequence starts again from Run."""
        self._worst_shown = False
        self._walking = False

    def advance(self) -> str:
        w = self.window
        if w.running():
            return self._say("running: wait for the result")
        view = w.current_view()
        if view == "code" and w.scroll_code(1):
            return self._say("code: next page")
        if view == "code":
            w.show_view("jacobians")
            if not w.result_current():
                self.reset()
                w.run()
                return self._say("run")
            return self._say("Jacobians")
        if view == "jacobians":
            if not w.result_current():
                self.reset()
                w.run()
                return self._say("run")
            if w.result_failed() and not self._worst_shown:
                self._worst_shown = True
                w.go_to_worst()
                return self._say("worst cell")
            w.show_view("backward")
            _step, steps = w.backward_step()
            if steps:
                self._walking = True
                w.step_backward(0)
                return self._say("backward step 1")
            return self._say("backward")
        if view == "backward":
            step, steps = w.backward_step()
            if not self._walking and steps:
                self._walking = True
                w.step_backward(0)
                return self._say("backward step 1")
            if self._walking and step + 1 < steps:
                w.step_backward(1)
                return self._say(f"backward step {step + 2}")
            w.show_view("memory")
            return self._say("memory")
        return self.change_example(+1)

    def retreat(self) -> str:
        w = self.window
        view = w.current_view()
        if view == "backward":
            step, _steps = w.backward_step()
            if self._walking and step > 0 and not w.running():
                w.step_backward(-1)
                return self._say(f"backward step {step}")
        if view == "code" and w.scroll_code(-1):
            return self._say("code: previous page")
        if view == "code":
            return self.change_example(-1)
        previous = VIEWS[max(VIEWS.index(view) - 1, 0)] if view in VIEWS else "code"
        w.show_view(previous)
        return self._say(VIEW_TITLES[previous])

    def change_example(self, delta: int) -> str:
        """The next (1) or previous (-1) built-in example, wrapping around, from its code."""
        w = self.window
        names = w.examples()
        if not names:
            return self._say("no examples")
        current = w.current_example()
        k = names.index(current) + delta if current in names else (0 if delta > 0 else len(names) - 1)
        name = names[k % len(names)]
        self.reset()
        w.load_example(name)
        w.show_view("code")
        return self._say(f"example {name}")

    def _say(self, what: str) -> str:
        self.acted.emit(what)
        return what
