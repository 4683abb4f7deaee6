"""Shared fixtures: small sources of user code written the way users write them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def write_source(tmp_path: Path):
    """Write dedented source to a .py file and return its path."""

    def write(source: str, name: str = "user_fn.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return write
