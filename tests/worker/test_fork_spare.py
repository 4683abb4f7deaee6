"""The pre-forked spare (fork start method): forked while the worker idles, warmed up (OpenMP's
thread pool started), it serves the next request, and it carries nothing from the run before it,
for it is a copy of the worker, which never runs user code. Real workers, real processes.
"""

from __future__ import annotations

import sys
import time

import pytest

from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker import start_method
from gradviz.worker.client import WorkerClient
from tests.sources import SQUARE
from tests.worker.lifecycle import children, waiting_for_its_order

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; fork is Linux's")

LEAVES_A_GLOBAL = SQUARE + '''
import builtins, os
builtins.left_by_the_first_run = True
open({out!r}, "w").write(str(os.getpid()))
'''

SAYS_WHO_IT_IS = SQUARE + '''
import builtins, os, torch
open({out!r}, "w").write(f"{{os.getpid()}} {{hasattr(builtins, 'left_by_the_first_run')}} {{torch.get_num_threads()}}")
'''


def request(path) -> CheckRequest:
    return CheckRequest(CodeSource(path=str(path)), timeout=120, arrays=False, graph=False)


def threads_of(pid: int) -> int:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def warm_spare(worker: int, not_this: set[int], seconds: float = 60.0) -> int | None:
    """The worker's child that is not one of ``not_this``, once it waits for its order (warmed
    up), polled until ``seconds`` pass."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for pid in children(worker):
            if pid not in not_this and waiting_for_its_order(pid):
                return pid
        time.sleep(0.02)
    return None


@pytest.fixture(autouse=True)
def fork_runs(monkeypatch):
    monkeypatch.setenv(start_method.START_ENV, "fork")
    monkeypatch.delenv(start_method.SPARE_ENV, raising=False)


def test_the_next_run_is_the_warm_spare_and_carries_nothing_of_the_run_before(write_source, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    with WorkerClient(output=None) as client:
        assert client.request(request(write_source(LEAVES_A_GLOBAL.format(out=str(first)), "first.py"))).ok
        spare = warm_spare(client.pid, {int(first.read_text())})
        assert spare is not None, "no warm spare was forked while the worker idled"
        pool = threads_of(spare)  # OpenMP's pool started in the warm-up: its threads are there
        reply = client.request(request(write_source(SAYS_WHO_IT_IS.format(out=str(second)), "second.py")))
        assert reply.ok and reply.result["passed"], reply.error
        pid, carried, run_threads = second.read_text().split()
        assert int(pid) == spare  # the spare served it
        assert carried == "False"  # the first run's global is not in it
        assert pool >= int(run_threads)  # the run's thread count, the main thread among them


def test_without_spares_every_run_is_a_fresh_fork(write_source, tmp_path, monkeypatch):
    monkeypatch.setenv(start_method.SPARE_ENV, "0")
    out = tmp_path / "who"
    with WorkerClient(output=None) as client:
        assert client.request(request(write_source(SQUARE, "square.py"))).ok
        before = set(children(client.pid))
        reply = client.request(request(write_source(SAYS_WHO_IT_IS.format(out=str(out)), "who.py")))
        assert reply.ok, reply.error
        assert int(out.read_text().split()[0]) not in before  # forked for this request
        end = time.monotonic() + 30  # the answered run exits on its own and is reaped
        while children(client.pid) and time.monotonic() < end:
            time.sleep(0.02)
        assert children(client.pid) == []  # and nothing waits beside the worker
