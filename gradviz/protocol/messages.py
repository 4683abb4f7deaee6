"""Messages between a client and the worker: one JSON object per line, in both directions.

Client -> worker: a run request, one of the typed requests of ``gradviz.schema.requests``
written by its ``to_message`` (``{"op": "check" | "sweep" | ..., "id": n, "out_dir": ..., <its
fields>}``; its ``timeout``, in seconds, is enforced by the worker, which stops a run that takes
longer and says where it was), or ``{"op": "cancel", "id": n}``, ``{"op": "repeat", "id": n}``
or ``{"op": "quit"}``.

Worker -> client: ``ready`` once, then for each request any number of ``progress`` messages and
exactly one ``result`` or ``error``. What the user's code prints never travels here: it goes to
the worker's stderr.

Every hop is *sealed*: each line carries an HMAC (``seal`` / ``SealedDecoder``). Run process ->
worker under a secret the worker draws for that run; client <-> worker, both ways, under a
secret the client draws for the session (``ClientSession``) and hands the worker as the first
line on its stdin, a pipe only the two hold, before any user code runs (never in argv or the
environment). A line that user code writes into any of these pipes (found in /proc/self/fd, in
/proc/<worker or client pid>/fd, or inherited by a forked child) is told apart from gradviz's
own: it can never read as a verdict nor as a request.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gradviz.schema import requests
from gradviz.schema.strict_json import dumps

PROTOCOL_VERSION = 2
RUN_OPS = requests.RUN_OPS  # requests that run user code (or torch) in a fresh process
CONTROL_OPS = ("cancel", "quit", "repeat")  # repeat: send the final answer to request ``id`` again
MAX_LINE_BYTES = 64 * 2**20  # a bigger line is a broken peer, not a message
KEY_BYTES = 32  # of each secret (a run's, a session's)


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of strict JSON (NaN and infinities as the strings of ``strict_json``)."""
    return (dumps(message) + "\n").encode("utf-8")


def ready(pid: int, torch_version: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "ready", "protocol": PROTOCOL_VERSION, "pid": pid, "torch": torch_version, "devices": devices}


def progress(request_id: int, done: int, total: int, unit: str = "") -> dict[str, Any]:
    """``unit``: what is counted (``schema.time_left.CHECK_UNIT``...), where the sender knows it."""
    message = {"type": "progress", "id": request_id, "done": done, "total": total}
    return {**message, "unit": unit} if unit else message


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


def seal(message: dict[str, Any], key: bytes | bytearray) -> bytes:
    """``message`` as a line that only a holder of ``key`` can have written: MAC, space, JSON."""
    body = dumps(message).encode("utf-8")
    return _mac(key, body) + b" " + body + b"\n"


def _mac(key: bytes | bytearray, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii")


MAC_BYTES = 64  # hex digits of an HMAC-SHA256


@dataclass
class BadLine:
    """A line that is not a JSON object: the peer is broken (or something wrote into the pipe)."""

    text: str
    reason: str
    unsealed: bool = False  # it does not carry the seal: something else than gradviz's peer wrote it

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
    well-formed JSON or not, is a BadLine that says it was not gradviz's.

    ``resync``: a line that fails but ends in a sealed line is that sealed line (bytes written
    into the pipe without a newline land in front of the next genuine line); what came before it
    is recorded in ``rejected``. The run's decoder does not resync: there any stray byte is
    tampering, and the worker says so.
    """

    def __init__(self, key: bytes | bytearray, *, resync: bool = False, signer: str = "gradviz's run code") -> None:
        super().__init__()
        self._key = key
        self.resync, self.signer = resync, signer
        self.rejected: list[BadLine] = []

    def parse(self, line: bytes) -> dict[str, Any] | BadLine:
        if self._verified(line):
            return parse_line(line[MAC_BYTES + 1 :])
        text = line[:200].decode("utf-8", "replace").strip()
        bad = BadLine(text, f"not sealed by {self.signer}", unsealed=True)
        if self.resync:
            for found in _SEAL_START.finditer(line, 1):
                if self._verified(line[found.start() :]):
                    self.rejected.append(BadLine(text[: found.start()], bad.reason, unsealed=True))
                    return parse_line(line[found.start() + MAC_BYTES + 1 :])
        return bad

    def _verified(self, line: bytes) -> bool:
        mac, body = line[:MAC_BYTES], line[MAC_BYTES + 1 :]
        return line[MAC_BYTES : MAC_BYTES + 1] == b" " and hmac.compare_digest(mac, _mac(self._key, body))


_SEAL_START = re.compile(rb"[0-9a-f]{64} \{")


class ClientSession:
    """A client's end of one worker session: the session's secret, its requests sealed, the
    worker's lines checked.

    Lines the worker did not seal (written into the client's end of the pipe, or into the worker's,
    through /proc) are never messages: ``feed`` drops them and keeps them in ``unsealed``, so the
    client can say so, and the verdict the worker did send still counts.
    """

    def __init__(self) -> None:
        self.key = os.urandom(KEY_BYTES)
        self.decoder = SealedDecoder(self.key, resync=True, signer="the gradviz worker")
        self.unsealed: list[BadLine] = []

    def hello(self) -> bytes:
        """The first line the worker reads on its stdin: the session's secret."""
        return self.key.hex().encode("ascii") + b"\n"

    def encode(self, message: dict[str, Any]) -> bytes:
        return seal(message, self.key)

    def feed(self, data: bytes) -> list[dict[str, Any] | BadLine]:
        """The worker's messages in ``data``; a BadLine only for a sealed line that is not a
        message (a broken worker), never for a line that is not the worker's."""
        found: list[dict[str, Any] | BadLine] = []
        for message in self.decoder.feed(data):
            if isinstance(message, BadLine) and message.unsealed:
                self.unsealed.append(message)
            else:
                found.append(message)
        self.unsealed.extend(self.decoder.rejected)
        self.decoder.rejected.clear()
        return found


HELLO_BYTES = 2 * KEY_BYTES + 1


def read_hello(fd: int) -> bytearray | None:
    """The worker's side of ``ClientSession.hello``: the session's secret, read from ``fd`` byte
    exact (the requests that follow stay in the pipe); None when the line is missing or wrong."""
    data = b""
    while len(data) < HELLO_BYTES:
        chunk = os.read(fd, HELLO_BYTES - len(data))
        if not chunk:
            return None
        data += chunk
    return read_hello_from_bytes(data)


def read_hello_from_bytes(data: bytes) -> bytearray | None:
    """The secret in a hello line, or None when it is not one."""
    try:
        key = bytearray.fromhex(data[:-1].decode("ascii")) if data.endswith(b"\n") else None
    except ValueError:
        return None
    return key if key is not None and len(key) == KEY_BYTES else None


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
