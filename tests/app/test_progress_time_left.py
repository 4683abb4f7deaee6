"""A long run shows the time it has left, not only counts: a real Function
big enough that the worker sends many progress messages, run in the real window."""

from __future__ import annotations

import re

from gradviz.schema.time_left import CHECK_UNIT, SHORT_UNITS, finishing_text
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


FINISHING = re.compile("^" + re.escape(finishing_text(0)).replace("0", r"\d+") + "$")


def test_the_count_says_what_it_counts_and_then_that_the_check_is_finishing(qtbot, main_window, tmp_path):
    """Each count names its unit as the worker's messages do; after the last unit, while the check
    compares and writes its results, the bar says "finishing… N s", not a count standing still."""
    window = main_window
    open_and_wait(qtbot, window, write(tmp_path, "slow_cumsum.py", SLOW_CUMSUM))
    seen: list[tuple[int, int, str, str, str]] = []  # each message's count and unit, and what the bar shows
    window.controller.progress.connect(
        lambda done, total: seen.append(
            (
                done, total, getattr(window.worker, "progress_unit", ""),
                window.run_bar.progress.format(), window.run_bar.progress.toolTip(),
            )
        )
    )
    run_and_wait(qtbot, window)
    assert window.current.result.passed and len(seen) >= 3, seen
    done, total, _unit, shown, _tip = seen[-1]
    assert done == total and FINISHING.match(shown), seen[-1]
    assert {unit for _done, _total, unit, _shown, _tip in seen} == {CHECK_UNIT}  # the worker names what it counts
    for done, total, unit, shown, tip in seen:
        assert tip == f"{done:,} of {total:,} {unit} computed"
        if done < total:
            assert shown == f"{done:,} / {total:,} {SHORT_UNITS[unit]}"


def test_cancel_stays_while_the_time_left_shows(qtbot, main_window, tmp_path):
    window = main_window
    open_and_wait(qtbot, window, write(tmp_path, "slow_cumsum.py", SLOW_CUMSUM))
    window.run()
    qtbot.waitUntil(lambda: window.run_bar.time_left.text().endswith("left"), timeout=RUN_TIMEOUT)
    assert window.run_bar.cancel_button.isEnabled() and window.run_bar.cancel_button.isVisible()
    window.run_bar.cancel_button.click()
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=RUN_TIMEOUT)
    assert window.run_bar.time_left.text() == "" and window.run_bar.progress.format() == "cancelled"
