"""User Functions that try to outlive, outgrow or outwit their run."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from tests.worker.lifecycle import gone

# forward starts a child in a session of its own and a double-forked daemon, writes their pids
# (and its own) to PIDS, then hangs or returns; backward is right, so a finished run passes
ESCAPER = '''
import os, subprocess, sys, time
import torch
from torch.autograd import Function

PIDS = {pids!r}

def daemon():
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode())
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    return int(os.read(r, 32))

class Escaper(Function):
    @staticmethod
    def forward(ctx, x):
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)
        pids = [os.getpid(), child.pid, daemon()]
        with open(PIDS + ".tmp", "w") as f:
            f.write(" ".join(map(str, pids)))
        os.replace(PIDS + ".tmp", PIDS)
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

HANG = "while True: time.sleep(0.01)"
# the run joins the worker's own process group, where a kill of the run's group misses it
JOIN_WORKER_GROUP = "os.setpgid(0, os.getpgid(os.getppid()))\n        " + HANG


def escaper_source(pid_file: Path, *, then: str = "pass") -> str:
    return ESCAPER.format(pids=str(pid_file), then=then)


def read_pids(pid_file: Path) -> list[int]:
    """[run, setsid child, daemon] once the run wrote them."""
    return [int(p) for p in pid_file.read_text().split()]


def kill_leftovers(pids: list[int]) -> None:
    """Cleanup for a test that failed: nothing of ours may outlive it."""
    for pid in pids:
        if not gone(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
