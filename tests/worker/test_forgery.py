"""A forged verdict, done for real: user code finds the run's pipe to the worker
and writes a well-formed PASSED result into it, then its wrong backward is checked.

The forged line is the very result the worker sent for a correct Function a moment before, under
the request's own id, so nothing but its origin tells it apart. It must come out as a FAILED
verdict or a clear error, never a pass: through the real worker and the real CLI's exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
from tests.paths import ROOT
from tests.sources import SQUARE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the pipe in /proc/self/fd")

# forward writes FORGED into every write-only pipe it holds (the protocol pipe among them; stderr
# too, harmlessly); backward is wrong (x * g, not 2 * x * g), so the honest verdict is FAILED
FORGER = '''
import fcntl, os
import torch
from torch.autograd import Function

FORGED = {forged!r}

def forge():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if os.readlink(f"/proc/self/fd/{{fd}}").startswith("pipe:") and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                os.write(fd, FORGED)
        except OSError:
            pass

class Forger(Function):
    @staticmethod
    def forward(ctx, x):
        {how}
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x * g
'''
EXAMPLE = '''
def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''
HOW = {
    "in_process": "forge()",
    "forked_child": "pid = os.fork()\n        if pid == 0:\n            forge()\n            os._exit(0)\n        os.waitpid(pid, 0)",
}


@pytest.fixture(scope="module")
def genuine_pass(tmp_path_factory) -> dict:
    """The result message the worker sends ``gradviz check`` for a correct Function (the request
    asks for the report, as the CLI's does): what a forger would copy."""
    path = tmp_path_factory.mktemp("genuine") / "square.py"
    path.write_text(SQUARE)
    with WorkerClient(output=None) as client:
        reply = client.request(CheckRequest(CodeSource(path=str(path)), timeout=120, arrays=False, graph=False, report=True))
    assert reply.ok and reply.result["report"]["passed"] and "PASSED" in reply.result["table"]
    return {"type": "result", "id": 1, "op": "check", "result": reply.result}


def forger_source(forged: dict, how: str, *, mac: bool) -> str:
    line = json.dumps(forged).encode()
    if mac:  # shaped like a sealed line, with a made-up seal
        line = b"0" * 64 + b" " + line
    return FORGER.format(forged=line + b"\n", how=HOW[how]) + EXAMPLE


@pytest.mark.parametrize("mac", [False, True], ids=["plain", "fake-seal"])
@pytest.mark.parametrize("how", sorted(HOW))
def test_a_pass_written_into_the_pipe_is_never_the_verdict_of_gradviz_check(write_source, genuine_pass, how, mac):
    path = write_source(forger_source(genuine_pass, how, mac=mac))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert "PASSED" not in out.stdout and out.returncode != 0, out.stdout
    assert out.returncode == 2, out.stderr
    assert "Something in the run wrote into gradviz's result channel" in out.stderr


def test_a_pass_written_into_the_pipe_is_an_error_from_the_worker_and_the_next_run_is_honest(
    write_source, genuine_pass
):
    path = write_source(forger_source(genuine_pass, "in_process", mac=False))
    with WorkerClient(output=None) as client:
        forged = client.request(CheckRequest(CodeSource(path=str(path)), timeout=120, arrays=False, graph=False))
        assert not forged.ok and forged.kind == "protocol", forged.result
        assert "not sealed by gradviz's run code" in forged.error["message"]
        honest = client.request(CheckRequest(CodeSource(path=str(write_source(SQUARE, "ok.py"))), timeout=120, arrays=False))
        assert honest.ok and honest.result["passed"]


# The same forged pass, written into the pipes of the processes above the run through /proc: the
# worker's write ends (its answer pipe among them) and the client's read ends (the CLI's end of
# the worker's answers). With ``newline`` False the bytes lack their line end, so they land in
# front of the worker's next genuine line.
PROC_FORGER = '''
import os
import torch
from torch.autograd import Function

FORGED = {forged!r}

def parent(pid):
    with open(f"/proc/{{pid}}/stat") as stat:
        return int(stat.read().rpartition(")")[2].split()[1])

def forge_into(pid, access):
    for name in os.listdir(f"/proc/{{pid}}/fd"):
        try:
            with open(f"/proc/{{pid}}/fdinfo/{{name}}") as info:
                flags = int(info.read().split("flags:")[1].split()[0], 8)
            if os.readlink(f"/proc/{{pid}}/fd/{{name}}").startswith("pipe:") and flags & os.O_ACCMODE == access:
                fd = os.open(f"/proc/{{pid}}/fd/{{name}}", os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, FORGED)
                os.close(fd)
                print("forged into", pid, name, flush=True)
        except (OSError, IndexError, ValueError):
            pass

class Forger(Function):
    @staticmethod
    def forward(ctx, x):
        worker = os.getppid()
        {target}
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x * g
'''
TARGETS = {
    "worker_answer_pipe": "forge_into(worker, os.O_WRONLY)",
    "client_read_end": "forge_into(parent(worker), os.O_RDONLY)",
}


@pytest.mark.parametrize("newline", [True, False], ids=["line", "no-newline"])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_pass_written_through_proc_into_the_workers_or_the_clients_pipe_is_ignored(
    write_source, genuine_pass, target, newline
):
    line = json.dumps(genuine_pass).encode() + (b"\n" if newline else b"")
    path = write_source(PROC_FORGER.format(forged=line, target=TARGETS[target]) + EXAMPLE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert "forged into" in out.stderr, out.stderr  # the forgery did happen
    assert out.returncode == 1 and "FAILED" in out.stdout and "PASSED" not in out.stdout, (out.stdout, out.stderr)
    assert "the worker did not seal" in out.stderr


def test_json_verdict_stays_false_when_the_clients_pipe_is_forged(write_source, genuine_pass):
    line = json.dumps(genuine_pass).encode() + b"\n"
    path = write_source(PROC_FORGER.format(forged=line, target=TARGETS["client_read_end"]) + EXAMPLE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", "--json", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["passed"] is False
