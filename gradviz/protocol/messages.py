"""Messages between a client and the worker: one JSON object per line, in both directions.

Client -> worker: a request ``{"op": "check" | "sweep" | "graph" | "memory" | "region", "id": n, ...}``, or
``{"op": "cancel", "id": n}``, or ``{"op": "quit"}``. Requests may carry ``"timeout"`` (seconds):
the worker itself stops a run that takes longer and says where it was.

Worker -> client: ``ready`` once, then for each request any number of ``progress`` messages and
exactly one ``result`` or ``error``. What the user's code prints never travels here: it goes to
the worker's stderr.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 2
RUN_OPS = ("check", "sweep", "graph", "memory", "region")  # requests that run user code (or torch) in a fresh process
CONTROL_OPS = ("cancel", "quit")
MAX_LINE_BYTES = 64 * 2**20  # a bigger line is a broken peer, not a message


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of strict JSON (NaN and infinities are not JSON: refused)."""
    return (json.dumps(message, allow_nan=False) + "\n").encode("utf-8")


def request(op: str, request_id: int, **payload: Any) -> dict[str, Any]:
    return {"op": op, "id": request_id, **payload}


def ready(pid: int, torch_version: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "ready", "protocol": PROTOCOL_VERSION, "pid": pid, "torch": torch_version, "devices": devices}


def progress(request_id: int, done: int, total: int) -> dict[str, Any]:
    return {"type": "progress", "id": request_id, "done": done, "total": total}


def phase(request_id: int, *, batched: bool) -> dict[str, Any]:
    """Run process -> worker only: user code now runs (or no longer runs) under vmap."""
    return {"type": "phase", "id": request_id, "batched": batched}


def result(request_id: int, op: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "result", "id": request_id, "op": op, "result": payload}


def error(request_id: int | None, op: str | None, detail: dict[str, Any]) -> dict[str, Any]:
    return {"type": "error", "id": request_id, "op": op, "error": detail}


def is_final(message: dict[str, Any]) -> bool:
    """A message that ends its request (``result`` or ``error``)."""
    return message.get("type") in ("result", "error")


@dataclass
class BadLine:
    """A line that is not a JSON object: the peer is broken (or something wrote into the pipe)."""

    text: str
    reason: str

    def describe(self) -> str:
        shown = self.text if len(self.text) <= 200 else self.text[:200] + "…"
        return f"a line that is not a gradviz message ({self.reason}): {shown!r}"


class LineDecoder:
    """Bytes in, messages out: split on newlines, parse each line, never lose a partial line."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> Iterator[dict[str, Any] | BadLine]:
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        if len(self._pending) > MAX_LINE_BYTES:
            lines.append(self._pending)
            self._pending = b""
        for line in lines:
            if line.strip():
                yield parse_line(line)

    @property
    def pending(self) -> bytes:
        return self._pending


def parse_line(line: bytes) -> dict[str, Any] | BadLine:
    text = line.decode("utf-8", "replace").strip()
    if len(line) > MAX_LINE_BYTES:
        return BadLine(text[:200], f"{len(line):,} bytes long")
    try:
        value = json.loads(text)
    except ValueError as exc:
        return BadLine(text, f"not JSON: {exc.msg}")
    if not isinstance(value, dict):
        return BadLine(text, "not a JSON object")
    return value
