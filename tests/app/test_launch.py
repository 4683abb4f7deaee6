"""The three ways to start the app open the real window and render it after the first run."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest

from tests.paths import ROOT


def png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "main.py"], [sys.executable, "-m", "gradviz"], [sys.executable, "-m", "gradviz", "app"]],
    ids=["main.py", "python -m gradviz", "gradviz app"],
)
def test_launch_runs_the_default_example_and_screenshots(tmp_path, command):
    path = tmp_path / "window.png"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        # the real platform under Xvfb when there is a display (CI), where a bad exit segfaults
        "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "" if os.environ.get("DISPLAY") else "offscreen"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # fresh settings: the default example
        "GRADVIZ_RECOVERY_DIR": str(tmp_path / "recovery"),
    }
    args = [*command, "--screenshot", str(path)]
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    width, height = png_size(path)
    assert width >= 1280 and height >= 800
