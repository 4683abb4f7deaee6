"""The real worker process, spoken to line by line with a deadline on every wait.

WorkerClient waits as long as the worker takes; a test of a worker that could wedge must fail,
not hang, so these tests talk to ``python -P -m gradviz.worker`` (started exactly as the clients
start it) through this small driver instead where a wedge is what they test.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from gradviz.protocol import messages
from gradviz.protocol.launch import worker_command, worker_environment
from gradviz.schema.requests import CheckRequest, CodeSource, to_message


class RawWorker:
    def __init__(self, *, memory_limit_mb: float | None = None, cwd: Path | None = None, env: dict | None = None):
        base = {**os.environ, **(env or {})}
        self.process = subprocess.Popen(
            worker_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=worker_environment(base, warm=False, memory_limit_mb=memory_limit_mb),
            cwd=cwd,
            bufsize=0,
            start_new_session=True,
        )
        self.session = messages.ClientSession()
        self.process.stdin.write(self.session.hello())
        self.queue: list[Any] = []
        self.ready = self.wait_for(lambda m: m.get("type") == "ready", 180)

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, message: dict[str, Any]) -> None:
        self.process.stdin.write(self.session.encode(message))

    def check(self, request_id: int, path: Path, **extra: Any) -> None:
        request = CheckRequest(CodeSource(path=str(path)), arrays=False, graph=False, **extra)
        self.send(to_message(request, request_id, str(path.parent / f"run{request_id}")))

    def wait_for(self, accept, seconds: float) -> dict[str, Any]:
        """The first message ``accept`` takes; AssertionError past ``seconds``."""
        end = time.monotonic() + seconds
        while True:
            while self.queue:
                message = self.queue.pop(0)
                if isinstance(message, dict) and accept(message):
                    return message
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the worker did not answer within {seconds} s")
            readable, _, _ = select.select([self.process.stdout], [], [], left)
            if readable:
                data = os.read(self.process.stdout.fileno(), 65536)
                if not data:
                    raise AssertionError("the worker closed its output")
                self.queue.extend(self.session.feed(data))

    def answer(self, request_id: int, seconds: float = 60) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == request_id and messages.is_final(m), seconds)

    def quit(self, seconds: float = 10) -> int:
        self.process.stdin.close()
        return self.process.wait(seconds)

    def kill(self) -> None:
        """Kill the worker; what it started is the test's to check."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process.stdout.close()
        if not self.process.stdin.closed:
            self.process.stdin.close()
