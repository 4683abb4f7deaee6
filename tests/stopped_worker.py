"""A Function whose forward stops the worker (SIGSTOP), for the tests of the clients' own deadline.

The run process writes "RUN_PID WORKER_PID" to a file first, so a test can find both processes
and check that none is left, then stops its parent (the worker) and waits forever: the worker can
answer nothing, neither the timeout nor a Cancel, and a stopped process acts on no signal but
SIGKILL and SIGCONT.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from tests.worker.lifecycle import gone

STOPS_THE_WORKER = '''
import os, signal, time
import torch
from torch.autograd import Function

class StopsTheWorker(Function):
    @staticmethod
    def forward(ctx, x):
        with open({pid_file!r}, "w") as f:
            f.write(f"{{os.getpid()}} {{os.getppid()}}\\n")
        os.kill(os.getppid(), signal.SIGSTOP)
        while True:
            time.sleep(0.05)

    @staticmethod
    def backward(ctx, g):
        return 2 * g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''


def stopping_source(pid_file: Path) -> str:
    return STOPS_THE_WORKER.format(pid_file=str(pid_file))


def read_pids(pid_file: Path) -> tuple[int, int] | None:
    """(run pid, worker pid) once the run has written them; None before."""
    try:
        run, worker = pid_file.read_text().split()
    except (OSError, ValueError):
        return None
    return int(run), int(worker)


def wait_for_pids(pid_file: Path, seconds: float = 120) -> tuple[int, int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pids = read_pids(pid_file)
        if pids:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"the Function never wrote {pid_file}")


def state(pid: int) -> str | None:
    """The process state letter from /proc (R, S, T for stopped, Z); None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def wait_stopped(pid: int, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if state(pid) == "T":
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} was never stopped (state {state(pid)})")


def still_alive(pids: tuple[int, ...] | list[int]) -> list[int]:
    return [pid for pid in pids if not gone(pid)]


def kill_leftovers(pids: tuple[int, ...] | list[int]) -> None:
    """A failing test must not leave a stopped worker and its sleeping run behind."""
    for pid in pids:
        if not gone(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
