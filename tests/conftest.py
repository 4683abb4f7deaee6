"""Shared fixtures: small sources of user code written the way users write them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.worker_display import start_if_xdist_worker

_display = None


def pytest_configure(config):
    """Under pytest-xdist each worker gets its own X display and window manager (see worker_display)."""
    global _display
    _display = start_if_xdist_worker()


def pytest_collection_modifyitems(config, items):
    """Files that hold a test marked ``slow`` (over ~10 s in CI) run first, in their own order.

    ``make test`` runs two pytest processes with ``--dist loadfile``: each file goes whole to one
    process, handed out in collection order. Started last, one long file keeps one process busy
    while the other has nothing left to do; started first (longest first), the short files fill
    in behind them and both processes end together. Nothing is skipped: ``slow`` only orders."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: each file keeps its order


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
