"""Processes that outlive the worker, done for real: user code that leaves the worker's session and
kills the worker, a ``kill -9`` of the worker mid-run, and a ``kill -9`` of the CLI while user code
has stopped the worker. Containment cannot rest on the worker: afterwards no process of the
tree may be alive. The test marks the tree itself (an environment variable every process below
the CLI inherits) and looks for that mark in /proc, so what is checked does not depend on how
gradviz finds the tree.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.worker.lifecycle import wait_for_file

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

MARK = "GRADVIZ_TEST_TREE_MARK"

# forward starts a helper in a session of its own (setsid: it leaves every process group of the
# worker), writes the helper's and the worker's pids, then does ``{then}``
HELPER_SOURCE = '''
import os, signal, subprocess, time
import torch
from torch.autograd import Function

class Square(Function):
    @staticmethod
    def forward(ctx, x):
        helper = subprocess.Popen(["sleep", "300"], start_new_session=True)
        with open({pid_file!r} + ".tmp", "w") as f:
            f.write(f"{{helper.pid}} {{os.getppid()}}")
        os.rename({pid_file!r} + ".tmp", {pid_file!r})
        {then}
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''
THEN = {
    "kills_worker": "os.kill(os.getppid(), signal.SIGKILL)\n        while True: time.sleep(0.05)",
    "hangs": "while True: time.sleep(0.05)",
    "stops_worker": "os.kill(os.getppid(), signal.SIGSTOP)\n        while True: time.sleep(0.05)",
}


def marked(token: str) -> list[int]:
    """Living (not zombie) processes whose environment holds the test's mark."""
    needle = f"\0{MARK}={token}\0".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if needle in b"\0" + environ and state not in "ZX":
            found.append(int(name))
    return found


def wait_none_marked(token: str, seconds: float) -> list[int]:
    end = time.monotonic() + seconds
    while (left := marked(token)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def start_cli(write_source, tmp_path, then: str) -> tuple[subprocess.Popen, str, Path]:
    pid_file = tmp_path / "pids"
    path = write_source(HELPER_SOURCE.format(pid_file=str(pid_file), then=THEN[then]))
    token = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(ROOT), MARK: token}
    cli = subprocess.Popen(
        [sys.executable, "-m", "gradviz", "check", "--timeout", "120", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    return cli, token, pid_file


def kill_leftovers(token: str) -> None:
    for pid in marked(token):
        os.kill(pid, signal.SIGKILL)


def test_user_code_that_leaves_the_session_and_kills_the_worker_leaves_nothing(write_source, tmp_path):
    cli, token, pid_file = start_cli(write_source, tmp_path, "kills_worker")
    try:
        _, stderr = cli.communicate(timeout=120)
        assert cli.returncode == 2 and "ended unexpectedly" in stderr, stderr
        assert pid_file.exists()
        assert wait_none_marked(token, 1.0) == [], "a process of the worker's tree outlived the CLI"
    finally:
        kill_leftovers(token)


def test_kill_9_of_the_worker_mid_run_leaves_nothing(write_source, tmp_path):
    cli, token, pid_file = start_cli(write_source, tmp_path, "hangs")
    try:
        _, worker = map(int, wait_for_file(pid_file, 60).split())
        os.kill(worker, signal.SIGKILL)
        _, stderr = cli.communicate(timeout=60)
        assert cli.returncode == 2 and "ended unexpectedly" in stderr, stderr
        assert wait_none_marked(token, 1.0) == [], "a process of the worker's tree outlived the CLI"
    finally:
        kill_leftovers(token)


def test_kill_9_of_the_cli_while_user_code_stopped_the_worker_leaves_nothing(write_source, tmp_path):
    cli, token, pid_file = start_cli(write_source, tmp_path, "stops_worker")
    try:
        helper, worker = map(int, wait_for_file(pid_file, 60).split())
        end = time.monotonic() + 10  # the worker stops itself right after the file appears
        while Path(f"/proc/{worker}/stat").read_text().rpartition(")")[2].split()[0] != "T":
            assert time.monotonic() < end, "the worker never stopped"
            time.sleep(0.02)
        assert {helper, worker} <= set(marked(token))
        cli.kill()
        cli.communicate(timeout=10)
        assert wait_none_marked(token, 5.0) == [], "a process of the worker's tree outlived the CLI"
    finally:
        kill_leftovers(token)
