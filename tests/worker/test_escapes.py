"""User code that escapes its run, done for real to the real worker.

Real Functions start a child in a session of its own and a double-forked daemon, join the
worker's process group, fork a child that touches hundreds of megabytes, or lie in wait as a
``torch.py`` in the current folder; real CLIs get real SIGINT and SIGTERM. The kernel (/proc)
says what is left afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradviz.protocol import process_tree
from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
from tests.paths import ROOT
from tests.sources import SQUARE
from tests.worker.escapes import HANG, JOIN_WORKER_GROUP, escaper_source, kill_leftovers, read_pids
from tests.worker.lifecycle import (
    children,
    gone,
    interruptible,
    wait_for_file,
    wait_gone,
    waiting_for_its_order,
)
from tests.worker.raw_worker import RawWorker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def request(path: Path, timeout: float | None = None) -> CheckRequest:
    return CheckRequest(CodeSource(path=str(path)), timeout=timeout, arrays=False, graph=False)


def cli(*args: str, cwd: Path | None = None, env: dict | None = None, **popen) -> subprocess.Popen:
    """``gradviz ARGS`` as the installed command starts it: no current folder on its own path (-P)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    env.pop("PYTHONSAFEPATH", None)  # it would reach the worker and hide a missing -P
    return subprocess.Popen([sys.executable, "-P", "-m", "gradviz", *args], cwd=cwd, env=env, text=True, **popen)


# --- processes that leave the run's group ------------------------------------------------------


def test_a_setsid_child_and_a_daemon_end_with_a_finished_run(write_source, tmp_path):
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file))
    pids = []
    try:
        with WorkerClient(output=None) as client:
            reply = client.request(request(path, timeout=60))
            assert reply.ok and reply.result["passed"], reply.error
            pids = read_pids(pid_file)
            assert wait_gone(pids, 5.0), "a process the run started outlived the run"
            assert client.request(request(write_source(SQUARE, "ok.py"), timeout=60)).ok
    finally:
        kill_leftovers(pids)


def test_a_setsid_child_and_a_daemon_end_with_a_timed_out_run(write_source, tmp_path):
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file, then=HANG))
    pids = []
    try:
        with WorkerClient(output=None) as client:
            reply = client.request(request(path, timeout=3))
            pids = read_pids(pid_file)
            assert reply.kind == "timeout", reply.error
            assert wait_gone(pids, 5.0), "a process the run started outlived the run"
    finally:
        kill_leftovers(pids)


def test_a_setsid_child_and_a_daemon_end_on_cancel_and_the_worker_serves_on(write_source, tmp_path):
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file, then=HANG))
    worker, pids = RawWorker(), []
    try:
        worker.check(1, path)
        pids = [int(p) for p in wait_for_file(pid_file, 60).split()]
        worker.send({"op": "cancel", "id": 1})
        assert worker.answer(1, 30)["error"]["kind"] == "cancelled"
        assert wait_gone(pids, 5.0), "a process the run started outlived Cancel"
        worker.check(2, write_source(SQUARE, "ok.py"))
        assert worker.answer(2, 60)["type"] == "result"
        assert worker.quit() == 0
    finally:
        worker.kill()
        kill_leftovers(pids)


CLIENT = """
import sys
from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
client = WorkerClient(output=None)
client.start()
print(client.pid, flush=True)
client.request(CheckRequest(CodeSource(path=sys.argv[1]), arrays=False, graph=False))
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_setsid_child_and_a_daemon_end_when_the_client_dies(write_source, tmp_path, sig):
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file, then=HANG))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    pids = []
    try:
        worker = int(client.stdout.readline())
        pids = [int(p) for p in wait_for_file(pid_file, 60).split()]
        client.send_signal(sig)
        client.wait(10)
        assert wait_gone([worker, *pids], 5.0), "the worker or a process the run started outlived the client"
    finally:
        client.kill()
        client.wait()
        kill_leftovers(pids)


def test_a_setsid_child_and_a_daemon_end_with_gradviz_check(write_source, tmp_path):
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file))
    pids = []
    try:
        process = cli("check", str(path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0 and "PASSED" in out, err
        pids = read_pids(pid_file)
        assert wait_gone(pids, 5.0), "a process the run started outlived gradviz check"
    finally:
        kill_leftovers(pids)


# --- a run that joins the worker's process group -----------------------------------------------


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_a_run_in_the_workers_own_group_is_stopped_and_the_next_run_is_served(write_source, tmp_path, stop):
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file, then=JOIN_WORKER_GROUP))
    worker, pids = RawWorker(), []
    try:
        worker.check(1, path, **({"timeout": 3} if stop == "timeout" else {}))
        pids = [int(p) for p in wait_for_file(pid_file, 60).split()]
        if stop == "cancel":
            worker.send({"op": "cancel", "id": 1})
        error = worker.answer(1, 30)["error"]
        assert error["kind"] == ("timeout" if stop == "timeout" else "cancelled"), error
        line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "while True" in text)
        assert error["lineno"] == line
        assert wait_gone(pids, 5.0), "the run (or what it started) still runs after it was reported stopped"
        worker.check(2, write_source(SQUARE, "ok.py"))
        assert worker.answer(2, 60)["type"] == "result"
    finally:
        worker.kill()
        kill_leftovers(pids)


# --- memory of the whole tree ------------------------------------------------------------------

FORKS_AND_TOUCHES = '''
import os, time
import torch
from torch.autograd import Function

class Forks(Function):
    @staticmethod
    def forward(ctx, x):
        child = os.fork()
        if child == 0:
            block = b"\\x01" * ({megabytes} * 2**20)  # every page written: resident in the child
            time.sleep({child_lives})
            os._exit(0)
        os.waitpid(child, 0)
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''


@pytest.mark.slow
def test_memory_of_a_forked_child_counts_against_the_limit(write_source):
    """The run itself holds about 160 MB (torch's pages, shared with the worker); a 250 MB limit
    passes a child that touches 8 MB and stops one that touches 400 MB. The small child lives
    0.3 s at each of the forward's many calls: six of the supervisor's looks (POLL_S) each time."""
    light = write_source(FORKS_AND_TOUCHES.format(megabytes=8, child_lives=0.3), "light.py")
    heavy = write_source(FORKS_AND_TOUCHES.format(megabytes=400, child_lives=60), "heavy.py")
    line = next(k for k, text in enumerate(heavy.read_text().splitlines(), 1) if "os.waitpid" in text)
    with WorkerClient(output=None, memory_limit_mb=250) as client:
        baseline = client.request(request(light, timeout=60))
        assert baseline.ok and baseline.result["passed"], baseline.error  # the run and a small child fit
        reply = client.request(request(heavy, timeout=60))
        assert reply.kind == "out_of_memory", reply.error
        assert "limit of 250.0 MiB" in reply.error["message"] and reply.error["lineno"] == line
        assert wait_no_descendants(client.pid, 5.0)  # the child went with the run (the spare may wait)


def wait_no_descendants(pid: int, seconds: float) -> bool:
    """True once nothing runs below ``pid`` but the worker's pre-forked spare, a child of its own
    that waits on a pipe for its order (zombies not yet reaped count as gone)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        running = [p for p in process_tree.descendants(pid) if not gone(p)]
        if len(running) <= 1 and all(p in children(pid) and waiting_for_its_order(p) for p in running):
            return True  # one spare at most
        time.sleep(0.02)
    return False


# --- the current folder at launch --------------------------------------------------------------

HOSTILE = "open({marker!r}, 'w').write(__file__)\n"


def hostile_folder(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A folder holding a torch.py and a numpy.py that each leave a marker file when imported."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    markers = []
    for name in ("torch", "numpy"):
        marker = tmp_path / f"{name}-ran"
        (folder / f"{name}.py").write_text(HOSTILE.format(marker=str(marker)))
        markers.append(marker)
    return folder, markers


def users_file(tmp_path: Path) -> Path:
    """SQUARE in a folder of its own, importing a sibling module (the README's promise)."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "sibling.py").write_text("FACTOR = 2\n")
    path = folder / "ok.py"
    path.write_text(SQUARE.replace("import torch\n", "import torch\nfrom sibling import FACTOR\n", 1))
    return path


def test_a_torch_py_in_the_current_folder_never_runs_from_gradviz_check(tmp_path):
    folder, markers = hostile_folder(tmp_path)
    path = users_file(tmp_path)
    process = cli("check", str(path), cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=300)
    assert [m for m in markers if m.exists()] == [], "code from the current folder ran"
    assert process.returncode == 0 and "PASSED" in out, err


@pytest.mark.parametrize("pythonpath", ["", ":"], ids=["plain", "empty-entry"])
def test_a_torch_py_in_the_current_folder_never_runs_in_the_worker(tmp_path, monkeypatch, pythonpath):
    """The worker as both clients start it, from a folder holding a torch.py; with an empty
    PYTHONPATH entry too (``export PYTHONPATH=$PYTHONPATH:/x``), which also means "here"."""
    folder, markers = hostile_folder(tmp_path)
    path = users_file(tmp_path)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PYTHONPATH", pythonpath + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    with WorkerClient(output=None) as client:
        reply = client.request(request(path, timeout=60))
    assert [m for m in markers if m.exists()] == [], "code from the current folder ran"
    assert reply.ok and reply.result["passed"], reply.error


# --- interrupting the CLI leaves no folder and no process -------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_gradviz_check_leaves_no_folder_and_no_process(write_source, tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pid_file = tmp_path / "pids"
    path = write_source(escaper_source(pid_file, then=HANG))
    process = cli(
        "check", str(path), env={"TMPDIR": str(tmp)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=interruptible,
    )
    pids = []
    try:
        pids = [int(p) for p in wait_for_file(pid_file, 120).split()]
        worker = process_tree.parent_of(pids[0])
        assert worker is not None and worker != process.pid
        process.send_signal(sig)
        process.wait(30)
        assert wait_gone([worker, *pids], 5.0), "the worker or a process the run started outlived the CLI"
        assert sorted(p.name for p in tmp.iterdir()) == []
    finally:
        process.kill()
        process.wait()
        kill_leftovers(pids)
