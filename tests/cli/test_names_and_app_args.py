"""Names the OS refuses and bad window arguments, run through the real CLI in a subprocess.

A target name over 255 bytes, which the OS refuses to look up (ENAMETOOLONG), is one line and
exit 2 for every command, never an OSError traceback with exit 1 (the FAILED code).
``--screenshot`` into a folder that does not exist and an unknown ``--example`` are refused
before Qt starts, never exit 0 having written nothing or opened the default.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gradviz.schema.library import builtin_functions
from tests.cli.runner import gradviz
from tests.paths import ROOT

LONG = "a" * 300  # a path component the file system refuses: NAME_MAX is 255 bytes


def one_line_error(out: subprocess.CompletedProcess) -> str:
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(lines) == 1 and lines[0].startswith("gradviz: error: "), out.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["check", LONG],
        ["check", f"{LONG}.py"],
        ["graph", LONG],
        ["sweep", LONG],
        ["check", f"{LONG}.py:Square"],
        ["check", f"mod:{LONG}"],
        ["check", f"{LONG}:Square"],
        ["graph", f"pkg.{LONG}:Square"],
        ["check", f"folder/{LONG}/f.py"],
        [f"{LONG}.py"],  # opens in the window: refused before Qt starts
    ],
    ids=["check", "check.py", "graph", "sweep", "file:Name", "mod:Name", "long-module:Name", "pkg.long:Name", "in-folder", "window"],
)
def test_a_name_too_long_for_the_file_system_is_one_line_and_exit_two(args, tmp_path):
    line = one_line_error(gradviz(*args, cwd=tmp_path))
    assert "Traceback" not in line and "OSError" not in line


def test_a_screenshot_into_a_missing_folder_is_refused(tmp_path):
    target = tmp_path / "nonexistent" / "dir" / "x.png"
    line = one_line_error(gradviz("--screenshot", str(target)))
    assert f"the folder {target.parent} does not exist; create it first" in line
    assert not (tmp_path / "nonexistent").exists()  # refused, not created


@pytest.mark.parametrize(
    ("name", "expected"),
    [("x.txt", "name a .png, .jpg, .jpeg, .bmp file"), ("folder.png", "that path is a folder")],
)
def test_a_screenshot_qt_cannot_write_is_refused(tmp_path, name, expected):
    (tmp_path / "folder.png").mkdir()
    assert expected in one_line_error(gradviz("--screenshot", str(tmp_path / name)))


def test_an_unknown_example_is_refused_with_the_list():
    line = one_line_error(gradviz("--example", "nope"))
    assert "--example nope: no such built-in example; the examples are: " in line
    assert all(entry.name in line for entry in builtin_functions())


@pytest.fixture
def full_folder(tmp_path):
    """A real full file system: a 64 KiB tmpfs filled to the last byte (root only; skipped elsewhere)."""
    folder = tmp_path / "full"
    folder.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.decode().strip()}")
    try:
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # ENOSPC: full
            pass
        finally:
            os.close(fd)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_screenshot_that_cannot_be_written_exits_two(tmp_path, full_folder):
    """Past every check before Qt: the disk is full when the window saves. It exited 0."""
    path = full_folder / "window.png"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "GRADVIZ_RECOVERY_DIR": str(tmp_path / "recovery"),
    }
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "--screenshot", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 2, out.stderr
    assert f"gradviz: error: could not write the screenshot to {path}." in out.stderr
