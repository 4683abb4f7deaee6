"""Messages between a client and the worker: one JSON object per line, in both directions.

Client -> worker: a request ``{"op": "check" | "sweep" | "graph" | "memory" | "region", "id": n, ...}``, or
``{"op": "cancel", "id": n}``, or ``{"op": "quit"}``. Requests may carry ``"timeout"`` (seconds):
the worker itself stops a run that takes longer and says where it was.

Worker -> client: ``ready`` once, then for each request any number of ``progress`` messages and
exactly one ``result`` or ``error``. What the user's code prints never travels here: it goes to
the worker's stderr.

Run process -> worker: the same messages, each line *sealed* with an HMAC under a secret the
worker draws for that run (``seal`` / ``SealedDecoder``), so a line that user code writes into
the pipe (found in /proc/self/fd, or inherited by a forked child) is told apart from gradviz's
own and can never read as a verdict.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gradviz.schema.strict_json import dumps

PROTOCOL_VERSION = 2
RUN_OPS = ("check", "sweep", "graph", "memory", "region", "audit")  # requests that run user code (or torch) in a fresh process
CONTROL_OPS = ("cancel", "quit")
MAX_LINE_BYTES = 64 * 2**20  # a bigger line is a broken peer, not a message


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of strict JSON (NaN and infinities as the strings of ``strict_json``)."""
    return (dumps(message) + "\n").encode("utf-8")


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


def seal(message: dict[str, Any], key: bytes) -> bytes:
    """``message`` as a line that only a holder of ``key`` can have written: MAC, space, JSON."""
    body = dumps(message).encode("utf-8")
    return _mac(key, body) + b" " + body + b"\n"


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii")


MAC_BYTES = 64  # hex digits of an HMAC-SHA256


@dataclass
class BadLine:
    """A line that is not a JSON object: the peer is broken (or something wrote into the pipe)."""

    text: str
    reason: str

    def describe(self) -> str:
        shown = self.text if len(self.text) <= 200 else self.text[:200] + "…"
        return f"a line that is not a gradviz message ({self.reason}): {shown!r}"


class LineDecoder:
    """Bytes in, messages out: split on newlines, parse each line, never lose a partial line.

    A partial line is kept as a list of chunks (joined once, when its end arrives), so a line of
    many megabytes costs its size, not its size times the number of reads. A line that passes
    MAX_LINE_BYTES without an end is reported once and the rest of it dropped up to its end.
    """

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False  # inside an overlong line already reported

    def feed(self, data: bytes) -> Iterator[dict[str, Any] | BadLine]:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            piece, start = data[start:end], end + 1
            if self._skipping:
                self._skipping = False
                continue
            line = b"".join((*self._parts, piece)) if self._parts else piece
            self._parts, self._size = [], 0
            if line.strip():
                yield self.parse(line)
        rest = data[start:]
        if self._skipping or not rest:
            return
        self._parts.append(rest)
        self._size += len(rest)
        if self._size > MAX_LINE_BYTES:
            head = b"".join(self._parts)[:200].decode("utf-8", "replace")
            yield BadLine(head, f"{self._size:,} bytes long and no end in sight")
            self._parts, self._size, self._skipping = [], 0, True

    def parse(self, line: bytes) -> dict[str, Any] | BadLine:
        return parse_line(line)

    @property
    def pending(self) -> bytes:
        return b"".join(self._parts)


class SealedDecoder(LineDecoder):
    """A LineDecoder that accepts only lines sealed with ``key`` (see ``seal``); any other line,
    well-formed JSON or not, is a BadLine that says it was not gradviz's."""

    def __init__(self, key: bytes) -> None:
        super().__init__()
        self._key = key

    def parse(self, line: bytes) -> dict[str, Any] | BadLine:
        mac, body = line[:MAC_BYTES], line[MAC_BYTES + 1 :]
        if line[MAC_BYTES : MAC_BYTES + 1] != b" " or not hmac.compare_digest(mac, _mac(self._key, body)):
            text = line[:200].decode("utf-8", "replace").strip()
            return BadLine(text, "not sealed by gradviz's run code")
        return parse_line(body)


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
