"""User code that stops the worker (SIGSTOP) cannot hold ``gradviz check`` past its time limit.

A stopped worker answers nothing: not the timeout, not the CLI's quit, not SIGTERM. The client
keeps its own deadline (the timeout plus a grace) and kills the worker with its whole tree; and
a CLI that is interrupted or terminated meanwhile kills it on its way out. Afterwards neither the
worker nor the run that stopped it is alive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
from tests.paths import ROOT
from tests.sources import SQUARE
from tests.stopped_worker import (
    kill_leftovers,
    read_pids,
    still_alive,
    stopping_source,
    wait_for_pids,
    wait_stopped,
)
from tests.worker.lifecycle import interruptible, wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

HANG_GUARD_S = 180  # far past start-up + timeout + grace: reached only when the CLI hangs


def start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gradviz", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=interruptible,
    )


def finish(process: subprocess.Popen) -> tuple[str, str]:
    try:
        return process.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("gradviz check never ended: its worker is stopped") from None


def test_timeout_ends_a_stopped_worker_and_its_run(tmp_path):
    pid_file = tmp_path / "pids"
    path = tmp_path / "stops.py"
    path.write_text(stopping_source(pid_file))
    process = start_cli("check", str(path), "--json", "--timeout", "3")
    pids: tuple[int, ...] = ()
    try:
        stdout, stderr = finish(process)
        pids = wait_for_pids(pid_file, 1)  # the forward ran, and stopped the worker
        assert process.returncode == 2, stderr
        error = json.loads(stdout)["error"]
        assert error["kind"] == "timeout" and error["worker_replaced"]
        assert "did not finish within 3 s" in error["message"] and "stopped responding" in error["message"]
        assert wait_gone(list(pids), 10), f"still alive: {still_alive(pids)}"
    finally:
        process.kill()
        process.wait()
        kill_leftovers(pids or read_pids(pid_file) or ())


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_terminated_or_interrupted_while_the_worker_is_stopped(tmp_path, sig, code, word):
    """No timeout: only the signal ends the CLI, and its stopped worker must not outlive it."""
    pid_file = tmp_path / "pids"
    path = tmp_path / "stops.py"
    path.write_text(stopping_source(pid_file))
    process = start_cli("check", str(path))
    pids: tuple[int, ...] = ()
    try:
        pids = wait_for_pids(pid_file)
        wait_stopped(pids[1])
        process.send_signal(sig)
        _, stderr = finish(process)
        assert process.returncode == code, stderr
        assert stderr.strip().endswith(f"gradviz: {word}") and "Traceback" not in stderr
        assert wait_gone(list(pids), 10), f"still alive: {still_alive(pids)}"
    finally:
        process.kill()
        process.wait()
        kill_leftovers(pids or read_pids(pid_file) or ())


def test_the_client_replaces_a_stopped_worker_and_serves_on(tmp_path):
    """The Python client: the stopped request fails as a timeout, the next one gets a fresh worker."""
    pid_file = tmp_path / "pids"
    stops, square = tmp_path / "stops.py", tmp_path / "square.py"
    stops.write_text(stopping_source(pid_file))
    square.write_text(SQUARE)
    pids: tuple[int, ...] = ()
    with WorkerClient(output=None) as client:
        client.grace = 1.0
        try:
            reply = client.request(CheckRequest(CodeSource(path=str(stops)), timeout=2, arrays=False, graph=False))
            pids = wait_for_pids(pid_file, 1)
            assert reply.kind == "timeout" and "stopped responding" in reply.error["message"]
            assert not client.alive
            assert wait_gone(list(pids), 10), f"still alive: {still_alive(pids)}"
            reply = client.request(CheckRequest(CodeSource(path=str(square)), timeout=60, arrays=False, graph=False))
            assert reply.ok and reply.result["passed"]
            assert client.pid not in pids
        finally:
            kill_leftovers(pids or read_pids(pid_file) or ())
