"""Many runs in one window (edit, run, cancel mixed): nothing piles up."""

from __future__ import annotations

import os
import threading
from collections import Counter

import pytest
from PySide6.QtCore import Qt, QThread, QThreadPool

from gradviz.app import background
from tests.app.resources_usage import open_file_targets, snapshot, thread_names
from tests.app.test_main_window import HANG, RUN_TIMEOUT

RUNS = 24  # bench/soak.py does 100; this keeps CI short
ROUNDS_PER_CYCLE = 3  # one_round's kinds repeat every 3: two edited runs, one cancelled hang
MAX_WARM_UP_CYCLES = 4  # a real leak never settles: stop warming up and let the runs show it


def one_round(qtbot, window, k: int, original: str) -> None:
    """Round k: every third a hung run that is cancelled, else an edited source that runs."""
    if k % 3 == 2:
        window.editor.set_text(HANG)
        window.run()
        qtbot.waitUntil(lambda: window.worker.busy)
        qtbot.mouseClick(window.run_bar.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.worker.is_ready and not window.worker.busy, timeout=RUN_TIMEOUT)
        return
    window.editor.set_text(original + f"\n# edit {k}\n")
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        window.run()


POOLED = "Thread (pooled)"  # how Qt names a QThreadPool's threads (in /proc/PID/task/*/comm)
EVENTFD = "anon_inode:[eventfd]"


def quiet_snapshot(qtbot, window) -> dict:
    """What the window's process holds once nothing is in flight, the files and threads named.

    Work that ends by itself is waited for, so a snapshot never depends on timing: the worker idle,
    the app's background calls answered and their threads gone (the recovery file's writer ends
    when it has nothing to write), Qt's global thread pool (result files are read on it) emptied.

    Qt thread pools keep an idle thread for 30 s after its last task, and a pooled thread may hold
    an eventfd (its event dispatcher's wake-up) that it does not always give back when it expires:
    a snapshot taken as one expired counted 3 pooled threads and 5 eventfds, the next 2 and the same
    5, so subtracting one from the other moved the count by one with no file opened. Eventfds are
    counted apart from the other files and may only grow with the pooled threads; Qt's pools are
    capped at one thread per core and cannot grow with the number of runs."""
    qtbot.waitUntil(lambda: window.worker.is_ready and not window.worker.busy, timeout=RUN_TIMEOUT)
    qtbot.waitUntil(lambda: window.memory.result() is not None, timeout=RUN_TIMEOUT)
    qtbot.waitUntil(lambda: background.in_flight() == 0, timeout=RUN_TIMEOUT)
    qtbot.waitUntil(lambda: not any(t.name.startswith("gradviz") for t in threading.enumerate()))
    assert QThreadPool.globalInstance().waitForDone(RUN_TIMEOUT), "a task on Qt's thread pool never ended"
    files, names = consistent_files_and_threads()
    return {
        **snapshot(),
        "open files": len(files) - files.count(EVENTFD),
        "eventfds": files.count(EVENTFD),
        "pooled": names.count(POOLED),
        "threads": len(names) - names.count(POOLED),
        "files": files,
        "thread names": names,
    }


def consistent_files_and_threads() -> tuple[list[str], list[str]]:
    """The open files and thread names of one moment: read again while a thread came or went
    between the two reads (an idle pooled thread that expires in between may take its eventfd with
    it, so a file list read while it lived and names read after it left counted one file too many)."""
    while True:
        tasks, names = os.listdir("/proc/self/task"), thread_names()
        files = open_file_targets()
        if sorted(os.listdir("/proc/self/task")) == sorted(tasks):
            return files, names


def counts(held: dict) -> tuple[int, int]:
    return held["open files"], held["threads"]


def grown(before: dict, after: dict, key: str) -> list[str]:
    """What ``after[key]`` holds beyond ``before[key]`` (an extra file says what it is)."""
    return sorted((Counter(after[key]) - Counter(before[key])).elements())


@pytest.mark.slow
def test_many_runs_hold_no_more_files_threads_or_workers(qtbot, main_window):
    window = main_window
    original = window.editor.text()
    # Warm up (first result, memory study, caches, whatever starts lazily) one cycle of every kind
    # of round at a time, until a cycle leaves the counts where the one before left them.
    previous = None
    for cycle in range(MAX_WARM_UP_CYCLES):
        for k in range(cycle * ROUNDS_PER_CYCLE, (cycle + 1) * ROUNDS_PER_CYCLE):
            one_round(qtbot, window, k, original)
        before = quiet_snapshot(qtbot, window)
        if previous is not None and counts(before) == counts(previous):
            break
        previous = before
    for k in range(RUNS):
        one_round(qtbot, window, k, original)
    qtbot.waitUntil(lambda: snapshot()["workers"] == before["workers"], timeout=10_000)
    after = quiet_snapshot(qtbot, window)
    for name, held in (("before", before), ("after", after)):
        print(f"\n{RUNS} runs, {name}: {counts(held)} files and threads; {held}")
    left_open, left_running = grown(before, after, "files"), grown(before, after, "thread names")
    assert after["open files"] <= before["open files"], f"{RUNS} runs left open: {left_open}"
    more_pooled = max(0, after["pooled"] - before["pooled"])
    assert after["eventfds"] <= before["eventfds"] + more_pooled, f"{RUNS} runs left open: {left_open}"
    assert after["threads"] <= before["threads"], f"{RUNS} runs left threads: {left_running}"
    # the idle pooled threads left out above: the global pool's and QtGui's, each at most one a core
    pool_cap = 2 * QThread.idealThreadCount()
    assert after["thread names"].count(POOLED) <= pool_cap, f"{RUNS} runs left pooled threads: {left_running}"
    assert after["workers"] == before["workers"] == 1
    assert after["keepers"] == before["keepers"] == 1
    assert after["RSS MiB"] <= before["RSS MiB"] * 1.10
