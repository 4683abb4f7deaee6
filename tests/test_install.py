"""A non-editable install must find the built-in Functions (resources/ ships inside the wheel)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_for_the_wheel():
    """A package missing from pyproject's list is silently left out of a non-editable install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gradviz").rglob("__init__.py")
    }
    assert on_disk <= listed, sorted(on_disk - listed)


@pytest.mark.slow
def test_non_editable_install_finds_resources(tmp_path):
    shutil.rmtree(ROOT / "build", ignore_errors=True)  # a stale build/ would ship modules that are gone
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
