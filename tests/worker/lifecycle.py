"""Helpers for tests that do the real thing to real processes (kill -9, SIGTERM, Popen)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

SPAWNS_AND_HANGS = '''
import subprocess, time
import torch
from torch.autograd import Function

class Square(Function):
    @staticmethod
    def forward(ctx, x):
        child = subprocess.Popen(["sleep", "300"])
        open({pid_file!r}, "w").write(str(child.pid))
        {after_spawn}
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''


def spawning_source(pid_file: Path, *, hang: bool) -> str:
    """A Function whose forward starts `sleep 300` (pid written to ``pid_file``) and, with
    ``hang``, then loops forever."""
    after = "while True: time.sleep(0.01)" if hang else "pass"
    return SPAWNS_AND_HANGS.format(pid_file=str(pid_file), after_spawn=after)


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie nobody reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state == "Z"


def wait_gone(pids: list[int], seconds: float) -> bool:
    """True when every pid is gone within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.02)
    return all(gone(p) for p in pids)


def wait_for_file(path: Path, seconds: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def interruptible() -> None:
    """``preexec_fn``: Ctrl+C as a terminal delivers it, whoever started the tests. A job started in
    the background by a non-interactive shell inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt in the process it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    try:
        return [int(p) for p in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def waiting_for_its_order(pid: int) -> bool:
    """Blocked reading a pipe: a pre-forked spare that warmed up and waits for its order."""
    try:
        return "pipe" in open(f"/proc/{pid}/wchan").read()
    except OSError:
        return False
