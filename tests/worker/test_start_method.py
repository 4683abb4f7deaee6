"""Which start method the worker uses where, and one clear error where the worker cannot run."""

from __future__ import annotations

import sys

import pytest

from gradviz.protocol import launch
from gradviz.schema.errors import GradvizError
from gradviz.worker.client import WorkerClient, WorkerStartError
from gradviz.worker.start_method import START_ENV, start_method


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("linux", {}, "fork"),
        ("darwin", {}, "spawn"),
        ("freebsd14", {}, "spawn"),
        ("linux", {START_ENV: "spawn"}, "spawn"),
        ("darwin", {START_ENV: " Fork "}, "fork"),
        ("linux", {START_ENV: ""}, "fork"),
    ],
)
def test_fork_on_linux_spawn_elsewhere_unless_forced(platform, environ, expected):
    assert start_method(environ, platform) == expected


@pytest.mark.parametrize("value", ["bogus", "forkserver", "spwan"])
def test_a_start_method_gradviz_does_not_have_is_refused_by_name(value):
    with pytest.raises(GradvizError, match=f"{START_ENV}='{value}' is not a start method: use fork or spawn"):
        start_method({START_ENV: value}, "linux")


def test_gradviz_check_with_a_bogus_start_method_is_one_line_and_exit_2(tmp_path):
    """Through the real command: the worker refuses to start, the CLI says why in one line."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", "linear"],
        env={**os.environ, "PYTHONPATH": str(root), START_ENV: "bogus", "TMPDIR": str(tmp_path)},
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{START_ENV}='bogus' is not a start method" in lines[0], out.stderr
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_starting_the_worker_on_windows_is_one_gradviz_error_and_leaves_no_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(launch.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(WorkerStartError) as raised:
        WorkerClient(output=None).start()
    assert isinstance(raised.value, GradvizError)
    assert "needs Linux or macOS" in str(raised.value) and "gradviz.check" in str(raised.value)
    assert not list(tmp_path.glob(f"{launch.RUN_ROOT_PREFIX}*"))
    with pytest.raises(launch.WorkerUnsupported):
        launch.worker_command()


def test_the_window_where_the_worker_cannot_run_is_one_line_before_qt(monkeypatch, capsys):
    """On Windows the window could never check anything: `gradviz` says so instead of opening."""
    from gradviz.cli import main as cli

    monkeypatch.setattr(sys, "platform", "win32")
    qt_before = "PySide6.QtWidgets" in sys.modules
    assert cli.main(["app"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Linux or macOS" in err and "gradviz.check" in err
    assert ("PySide6.QtWidgets" in sys.modules) == qt_before


def test_show_where_the_worker_cannot_run_starts_nothing(monkeypatch, capsys, tmp_path):
    import torch

    from gradviz.api import window
    from gradviz.schema.settings import CheckSettings

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(window, "display_problem", lambda: None)  # as on a Windows desktop
    monkeypatch.setattr(window.subprocess, "Popen", lambda *a, **k: pytest.fail("a process was started"))
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    assert window.show_in_window(torch.sin, (x,), CheckSettings()) is None
    assert "Linux or macOS" in capsys.readouterr().err
