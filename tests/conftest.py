"""Shared fixtures: small sources of user code written the way users write them."""

from __future__ import annotations

import os
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.worker_display import start_if_xdist_worker

_display = None


def pytest_configure(config):
    """Under pytest-xdist each worker gets its own X display and window manager (see worker_display)."""
    global _display
    _display = start_if_xdist_worker()
    # xdist (3.7 and later) hands ``--dist loadfile`` files out by their number of tests, most
    # first, unless told not to: the slow files (a few tests each) then came last, and one of them
    # kept one process busy alone at the end. Keep the order made below.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _one_torch_thread()


def _one_torch_thread() -> None:
    """Two pytest processes share CI's two cores: torch's default of one thread per core in each
    made the in-process oracles spin against the other process (gradgradcheck on ``linear``: 3.8 s
    alone, 268 s beside a busy process). The worker processes the tests start choose their own."""
    import torch

    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Files that hold a test marked ``slow`` (over ~10 s in CI) run first, those with the most
    slow tests first; then the other files, those with the most tests first.

    ``make test`` runs two pytest processes with ``--dist loadfile``: each file goes whole to one
    process, handed out in this order. Started last, one long file keeps one process busy while
    the other has nothing left to do; started first, the short files fill in behind them and both
    processes end together. ``make test`` runs every test; ``make test-fast`` (``-m "not slow"``)
    leaves the slow ones out."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    tests = Counter(item.path for item in items)
    items.sort(key=lambda item: (-slow[item.path], -tests[item.path]))  # stable: a file keeps its order


def pytest_unconfigure(config):
    if _display is not None:
        _display.close()


@pytest.fixture
def write_source(tmp_path: Path):
    """Write dedented source to a .py file and return its path."""

    def write(source: str, name: str = "user_fn.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="module")
def cli():
    """``cli("check", FILE, ...)``: a ``gradviz`` command run in this process, every call of the
    module served by one worker (``tests.cli.runner.InProcessCli``); its CompletedProcess."""
    from tests.cli.runner import InProcessCli

    with InProcessCli() as run:
        yield run


@pytest.fixture(scope="module")
def shared_worker():
    """One started ``WorkerClient`` for the module's tests that need a verdict from the real
    worker, not a fresh one: each run is a process forked from it, and it serves on after any."""
    from gradviz.worker.client import WorkerClient

    with WorkerClient(output=None) as client:
        client.start()
        yield client
