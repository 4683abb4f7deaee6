"""A long run shows the time it has left, not only counts: a real Function
big enough that the worker sends many progress messages, run in the real window."""

from __future__ import annotations

import re

from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.app.why_sources import SLOW_CUMSUM, open_and_wait, write

LEFT = re.compile(r"^(<1 s|~\d+ s|~\d+ min \d\d s|~\d+ h \d\d min) left$")


def test_a_long_run_shows_the_time_left_before_its_result(qtbot, main_window, tmp_path):
    window = main_window
    open_and_wait(qtbot, window, write(tmp_path, "slow_cumsum.py", SLOW_CUMSUM))
    seen: list[tuple[str, str, bool]] = []  # (counts, time left, result on screen yet) at each progress message
    window.controller.progress.connect(  # after the run bar's own slot: what it shows now
        lambda done, total: seen.append(
            (window.run_bar.progress.format(), window.run_bar.time_left.text(), window.current.result is not None)
        )
    )
    assert window.run_bar.cancel_button.isEnabled() is False
    run_and_wait(qtbot, window)
    assert window.current.result.passed
    assert len(seen) >= 3, seen  # several progress messages
    during = [left for _counts, left, shown in seen if left]
    assert during and all(LEFT.match(left) for left in during), seen
    assert not any(shown for _counts, left, shown in seen if left)  # before the result
    assert window.run_bar.time_left.text() == ""  # gone once done
    assert window.run_bar.cancel_button.isEnabled() is False


def test_cancel_stays_while_the_time_left_shows(qtbot, main_window, tmp_path):
    window = main_window
    open_and_wait(qtbot, window, write(tmp_path, "slow_cumsum.py", SLOW_CUMSUM))
    window.run()
    qtbot.waitUntil(lambda: window.run_bar.time_left.text().endswith("left"), timeout=RUN_TIMEOUT)
    assert window.run_bar.cancel_button.isEnabled() and window.run_bar.cancel_button.isVisible()
    window.run_bar.cancel_button.click()
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=RUN_TIMEOUT)
    assert window.run_bar.time_left.text() == "" and window.run_bar.progress.format() == "cancelled"
