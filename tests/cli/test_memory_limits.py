"""``gradviz memory`` runs the conv-BN study in the worker, under the worker's memory limit, and
refuses a size that cannot fit before anything is allocated (in the CLI's own process a large
study can take 23.5 GB and meet the OOM killer; a huge --shape must be one line, not a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradviz.protocol.launch import MEMORY_ENV
from gradviz.schema.errors import SettingsError
from gradviz.schema.requests import MemoryRequest
from gradviz.schema.settings import MemoryOptions
from gradviz.worker.handlers import handle_memory
from tests.cli.runner import gradviz
from tests.paths import ROOT


@pytest.mark.parametrize(
    ("args", "size"),
    [
        (["--out-channels", "99999999"], "8x3x32x32 input with 99999999 output channels"),
        (["--shape", "100000,3,1000,1000"], "100000x3x1000x1000 input with 16 output channels"),
        (["--shape", f"{10**40},3,10,10"], f"{10**40}x3x10x10 input"),
    ],
)
def test_a_study_that_cannot_fit_is_one_line_and_exit_two(args, size):
    out = gradviz("memory", *args)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"gradviz: error: The memory study of {MemoryOptions().layers} layer(s) on a "
    ), lines
    assert size in lines[0] and "a run may use" in lines[0] and "Traceback" not in out.stderr


def test_the_workers_memory_limit_is_the_one_applied(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "memory", "--json"],
        env={**os.environ, "PYTHONPATH": str(ROOT), MEMORY_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2
    assert "more than the 1.0 MiB a run may use" in out.stderr
    assert json.loads(out.stdout)["error"]["kind"] == "settings"


def test_the_study_runs_in_the_worker_not_in_the_cli_process():
    """torch is blocked in the CLI's process: the study can only have run in the worker's."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from gradviz.cli.main import main\n"
        "raise SystemExit(main(['memory', '--layers', '2', '--shape', '2,3,12,12', '--json']))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["layers"] == 2 and data["saved_difference_bytes"] == data["formula_bytes"]


def test_the_windows_memory_request_is_refused_before_allocating():
    """The window's request (study plus the sweep at 4N) goes through the same check."""
    request = MemoryRequest(MemoryOptions(layers=1, shape=(8, 3, 32, 32), out_channels=99_999_999), sweep=True)
    with pytest.raises(SettingsError, match="32x32 input with 99999999 output channels"):
        handle_memory(request, None)
