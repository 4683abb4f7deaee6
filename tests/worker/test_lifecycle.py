"""Every run starts clean and leaves nothing behind; no client death leaves a process running.

Each test does the real thing: real user code that starts `sleep 300` with Popen, real
signals (SIGKILL, SIGTERM, SIGINT) to real client processes, and then checks with the kernel
that the worker and every process the user's code started are gone within a second.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import pytest

from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
from tests.paths import ROOT
from tests.sources import SQUARE
from tests.worker.lifecycle import interruptible, spawning_source, wait_for_file, wait_gone

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def request(path, timeout: float | None = None) -> CheckRequest:
    return CheckRequest(CodeSource(path=str(path)), timeout=timeout, arrays=False, graph=False)


def test_processes_the_users_code_started_end_with_a_successful_run(write_source, tmp_path):
    pid_file = tmp_path / "child.pid"
    path = write_source(spawning_source(pid_file, hang=False))
    with WorkerClient(output=None) as client:
        reply = client.request(request(path, timeout=60))
        assert reply.ok, reply.error
        assert wait_gone([int(pid_file.read_text())], 1.0)
        assert client.alive


def test_a_timed_out_run_takes_its_processes_with_it_and_names_the_line(write_source, tmp_path):
    pid_file = tmp_path / "child.pid"
    source = spawning_source(pid_file, hang=True)
    path = write_source(source)
    with WorkerClient(output=None) as client:
        reply = client.request(request(path, timeout=3))
        assert reply.kind == "timeout" and "did not finish within 3 s" in reply.error["message"]
        line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "while True" in text)
        assert reply.error["lineno"] == line
        assert wait_gone([int(pid_file.read_text())], 1.0)
        again = client.request(request(write_source(spawning_source(tmp_path / "b.pid", hang=False), "b.py")))
        assert again.ok


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
def test_killing_a_client_ends_its_worker_and_the_users_processes(write_source, tmp_path, sig):
    pid_file = tmp_path / "child.pid"
    path = write_source(spawning_source(pid_file, hang=True))
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(path)], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        worker = int(client.stdout.readline())
        user_child = int(wait_for_file(pid_file, 60))
        client.send_signal(sig)
        client.wait(10)
        assert wait_gone([worker, user_child], 1.0), "worker or the user's process outlived the client"
    finally:
        client.kill()
        client.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_cli_ends_the_users_processes(write_source, tmp_path, sig):
    pid_file = tmp_path / "child.pid"
    path = write_source(spawning_source(pid_file, hang=True))
    cli = subprocess.Popen(
        [sys.executable, "-m", "gradviz", "check", str(path)], stderr=subprocess.PIPE, text=True, env=ENV,
        preexec_fn=interruptible,
    )
    try:
        user_child = int(wait_for_file(pid_file, 60))
        time.sleep(0.1)
        cli.send_signal(sig)
        cli.wait(10)
        assert wait_gone([user_child], 1.5)
        if sig == signal.SIGINT:
            assert cli.returncode == 130 and "interrupted" in cli.stderr.read()
    finally:
        cli.kill()
        cli.wait()


def test_each_run_starts_from_the_same_clean_state(write_source):
    """A run that changes global state (grad mode, a monkeypatched torch, cwd, env, sys.path,
    thread count, a module in sys.modules) leaves nothing for the next run to see."""
    polluter = """
import os, sys, torch
from torch.autograd import Function
torch.set_grad_enabled(False)
torch.Tensor.__mul__ = lambda a, b: torch.zeros_like(a)  # a monkeypatch that would make a bug pass
torch.set_num_threads(1)
os.chdir("/")
os.environ["GRADVIZ_POLLUTED"] = "1"
sys.path.insert(0, "/polluted")
sys.modules["polluted_module"] = object()

class Square(Function):
    @staticmethod
    def forward(ctx, x):
        return x + 1

    @staticmethod
    def backward(ctx, g):
        return g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
"""
    probe = """
import os, sys, torch
from torch.autograd import Function
STATE = (torch.is_grad_enabled(), torch.get_num_threads(), os.getcwd(), "GRADVIZ_POLLUTED" in os.environ,
         "/polluted" in sys.path, "polluted_module" in sys.modules, (torch.ones(2) * 3).tolist())

class Buggy(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x * g  # wrong: must be 2 * x * g

def example_inputs(device, dtype):
    print(STATE, flush=True)
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
"""
    printed = io.StringIO()
    with WorkerClient(output=printed) as client:
        first = client.request(request(write_source(probe, "probe1.py")))
        polluted = client.request(request(write_source(polluter, "polluter.py")))
        second = client.request(request(write_source(probe, "probe2.py")))
    assert polluted.ok
    assert first.ok and second.ok and not second.result["passed"]  # the bug is still caught
    before, after = [line for line in printed.getvalue().splitlines() if line.startswith("(")]
    assert before == after and after.startswith("(True, ")


HOG = """
import torch
from torch.autograd import Function

class Hog(Function):
    @staticmethod
    def forward(ctx, x):
        kept = []
        while True:
            kept.append(torch.ones(16 * 2**20, dtype=torch.uint8))  # 16 MiB more, touched
        return x

    @staticmethod
    def backward(ctx, g):
        return g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
"""


def test_a_run_past_the_memory_limit_is_stopped_with_its_line(write_source):
    """The worker stops the run itself (the system's OOM killer never has to pick a victim)."""
    path = write_source(HOG)
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "kept.append" in text)
    with WorkerClient(output=None, memory_limit_mb=1024) as client:
        reply = client.request(request(path, timeout=120))
        assert reply.kind == "out_of_memory", reply.error
        assert f"ran out of memory at line {line}" in reply.error["message"] and "1.0 GiB" in reply.error["message"]
        assert reply.error["lineno"] == line
        assert client.request(request(write_source(SQUARE, "ok.py"))).ok  # the worker serves on


def test_save_dir_is_relative_to_where_the_cli_started_whatever_the_code_does(write_source, tmp_path):
    source = write_source(HOG.replace("class Hog", "import os\nos.chdir('/')\n\nclass Hog").replace(
        "        kept = []\n        while True:\n            kept.append(torch.ones(16 * 2**20, dtype=torch.uint8))  # 16 MiB more, touched\n        return x",
        "        return x * 1.0",
    ))
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", str(source), "--save", "arrays"],
        cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "arrays" / "analytic_o0_i0.npy").is_file()


HIDDEN_DATA = """
import torch

class Sq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * getattr(g, "da" + "ta")  # the data attribute, out of sight of a scan of the source

def example_inputs(device, dtype):
    return (torch.randn(40, device=device, dtype=dtype, requires_grad=True),)
"""


DIES_WHEN_BATCHED = """
import os
import signal
import torch

class Sq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        try:
            getattr(g, "data" + "_ptr")()  # spelled so: the source scan for the data attribute avoids vmap
        except RuntimeError:  # a batched tensor has no storage: die, as reading its data attribute can
            os.kill(os.getpid(), signal.SIGSEGV)
        (x,) = ctx.saved_tensors
        return 2 * x * g

def example_inputs(device, dtype):
    return (torch.randn(40, device=device, dtype=dtype, requires_grad=True),)
"""


def test_a_run_that_dies_inside_vmap_is_run_again_with_plain_calls(write_source):
    """A segfault inside a vmapped backward: gradviz's path, not the user's bug."""
    with WorkerClient(output=None) as client:
        reply = client.request(request(write_source(DIES_WHEN_BATCHED), timeout=120))
    assert reply.ok and reply.result["passed"], reply.error
    assert any("died inside a batched (vmap) call" in n for n in reply.result["notes"])
    assert reply.result["paths"]["analytic"] == "loop"


def test_data_on_a_batched_grad_gets_the_right_verdict_whether_or_not_it_kills(write_source):
    """Legacy vmap and ``.data`` may segfault, raise or carry on, by the allocator's layout: the
    verdict is gradcheck's either way, and a death is said."""
    with WorkerClient(output=None) as client:
        reply = client.request(request(write_source(HIDDEN_DATA), timeout=120))
    assert reply.ok and reply.result["passed"], reply.error
    died = any("died inside a batched (vmap) call" in n for n in reply.result["notes"])
    assert died or reply.result["notes"] == [], reply.result["notes"]


