"""Attacks on the worker (escapes, forged verdicts, endless recursion), each done for real against the real worker.

Each case returns "" when gradviz withstood it, else a short reason; each cleans up after itself.
Lighter versions of tests/worker/test_escapes.py, test_forgery.py and test_recursion.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.schema.requests import CheckRequest, CodeSource  # noqa: E402
from gradviz.worker.client import WorkerClient  # noqa: E402
from tests.sources import SQUARE  # noqa: E402
from tests.worker.escapes import HANG, JOIN_WORKER_GROUP, escaper_source  # noqa: E402
from tests.worker.lifecycle import gone  # noqa: E402


def check(path, timeout: float) -> CheckRequest:
    return CheckRequest(CodeSource(path=str(path)), timeout=timeout, arrays=False, graph=False, report=True)


def _gone_within(pids: list[int], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.02)
    return all(gone(p) for p in pids)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        if not gone(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _escape(then: str, timeout: float | None) -> str:
    folder = Path(tempfile.mkdtemp(prefix="attack-worker-"))
    pids: list[int] = []
    try:
        path = folder / "escaper.py"
        path.write_text(escaper_source(folder / "pids", then=then))
        with WorkerClient(output=None, warm=False) as client:
            reply = client.request(check(path, timeout))
            if (folder / "pids").exists():
                pids = [int(p) for p in (folder / "pids").read_text().split()]
            if not pids:
                return f"the run never started its processes ({reply.error})"
            if not _gone_within(pids, 5.0):
                return "a setsid child or a daemon outlived its run"
            (folder / "ok.py").write_text(SQUARE)
            if not client.request(check(folder / "ok.py", 60)).ok:
                return "the worker did not serve the next run"
        return ""
    finally:
        _kill(pids)
        shutil.rmtree(folder, ignore_errors=True)


def escapes_a_finished_run() -> str:
    return _escape("pass", 60)


def joins_the_workers_group() -> str:
    return _escape(JOIN_WORKER_GROUP, 3)


def escapes_a_timed_out_run() -> str:
    return _escape(HANG, 3)


def forges_a_pass() -> str:
    from tests.worker.test_forgery import forger_source

    folder = Path(tempfile.mkdtemp(prefix="attack-worker-"))
    try:
        (folder / "ok.py").write_text(SQUARE)
        with WorkerClient(output=None, warm=False) as client:
            genuine = client.request(check(folder / "ok.py", 60))
        forged = {"type": "result", "id": 1, "op": "check", "result": genuine.result}
        (folder / "forger.py").write_text(forger_source(forged, "in_process", mac=False))
        with WorkerClient(output=None, warm=False) as client:
            reply = client.request(check(folder / "forger.py", 60))
        if reply.ok and reply.result["report"]["passed"]:
            return "a PASSED line written into the pipe became the verdict"
        return ""
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def recursion_with_a_raised_limit() -> str:
    from tests.worker.test_recursion import RECURSES

    folder = Path(tempfile.mkdtemp(prefix="attack-worker-"))
    try:
        path = folder / "deep.py"
        path.write_text(RECURSES.format(call="deep(n + 1)"))
        with WorkerClient(output=None, warm=False) as client:
            reply = client.request(check(path, 120))
        message = (reply.error or {}).get("message", "")
        if reply.kind != "forward" or "RecursionError" not in message:
            return f"not a RecursionError at the user's line: {message[:120]!r}"
        return ""
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def attack_cases() -> list[tuple[str, Callable[[], str]]]:
    if not sys.platform.startswith("linux"):
        return []
    return [
        ("worker: setsid child and daemon after a finished run", escapes_a_finished_run),
        ("worker: setsid child and daemon after a timeout", escapes_a_timed_out_run),
        ("worker: a run joins the worker's process group", joins_the_workers_group),
        ("worker: a PASSED line forged into the pipe", forges_a_pass),
        ("worker: endless recursion under a raised limit", recursion_with_a_raised_limit),
    ]
