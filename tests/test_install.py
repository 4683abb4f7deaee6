"""A non-editable install must find the built-in Functions (resources/ ships inside the wheel)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_non_editable_install_finds_resources(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert build.returncode == 0, build.stderr
    assert (target / "gradviz" / "resources" / "functions" / "linear.py").is_file()
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("DISPLAY", None)
    code = "import gradviz, sys; print(gradviz.__file__); from gradviz.cli import main; sys.exit(main(['check', 'linear']))"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(str(target)) and "PASSED" in run.stdout
