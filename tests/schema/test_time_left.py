"""The time-left estimate on plain numbers: the rate is measured from the first report."""

from __future__ import annotations

import math

import pytest

from gradviz.schema.time_left import MIN_SECONDS, RunClock, seconds_left, time_left_text


def test_the_rate_so_far_gives_the_time_left():
    # 16 of 48 done in 8 s from the start: 2 per second, 32 left, 16 s
    assert seconds_left(16, 48, 8.0) == pytest.approx(16.0)
    # counted from the first report (4 done at 2 s): 12 more in 6 s, 32 left at 2 per second
    assert seconds_left(16, 48, 8.0, done_before=4, elapsed_before=2.0) == pytest.approx(16.0)


@pytest.mark.parametrize(
    ("done", "total", "elapsed", "before"),
    [
        (0, 48, 5.0, (0, 0.0)),  # nothing done yet: no rate
        (48, 48, 5.0, (0, 0.0)),  # finished: nothing left to estimate
        (60, 48, 5.0, (0, 0.0)),  # over the total (a bad report)
        (10, 48, MIN_SECONDS / 2, (0, 0.0)),  # too short to measure
        (10, 48, 5.0, (10, 1.0)),  # no work since the first report
        (10, 0, 5.0, (0, 0.0)),  # no total
        (10, 48, math.nan, (0, 0.0)),
    ],
)
def test_unknown_is_none(done, total, elapsed, before):
    assert seconds_left(done, total, elapsed, done_before=before[0], elapsed_before=before[1]) is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, ""),
        (0.4, "<1 s left"),
        (12.4, "~12 s left"),
        (59.6, "~1 min 00 s left"),
        (125, "~2 min 05 s left"),
        (3 * 3600 + 7 * 60 + 10, "~3 h 07 min left"),
        (-1, ""),
        (math.inf, ""),
    ],
)
def test_time_left_in_words(seconds, text):
    assert time_left_text(seconds) == text


def test_a_run_clock_counts_from_its_first_report():
    clock = RunClock()
    # the first report comes 3 s after Run (worker start-up, inputs): not part of the rate
    assert clock.report(100, 1000, 3.0) is None
    assert clock.report(300, 1000, 4.0) == pytest.approx(700 / 200)  # 200 per second since
    # a phase that counts from zero again starts a new measurement
    assert clock.report(10, 50, 5.0) is None
    assert clock.report(30, 50, 6.0) == pytest.approx(1.0)
