"""Sealed lines between a run and the worker, and the decoder on lines of many megabytes."""

from __future__ import annotations

import json
import os

from gradviz.protocol import messages


def test_sealed_lines_round_trip_and_anything_else_is_refused():
    key = os.urandom(32)
    decoder = messages.SealedDecoder(key)
    good = messages.result(1, "check", {"passed": False})
    forged = messages.result(1, "check", {"passed": True})
    data = (
        messages.seal(good, key)
        + messages.encode(forged)  # plain JSON, unsealed
        + b"0" * 64 + b" " + json.dumps(forged).encode() + b"\n"  # a made-up seal
        + messages.seal(forged, os.urandom(32))  # sealed under another run's key
        + messages.seal(good, key)[:-30] + b"true}}\n"  # a sealed line with its body changed
    )
    got = list(decoder.feed(data))
    assert got[0] == good
    assert all(isinstance(m, messages.BadLine) and "not sealed" in m.reason for m in got[1:]) and len(got) == 5


def test_a_line_of_many_megabytes_in_small_reads_costs_its_size_not_its_square():
    """64 KiB reads of a 32 MiB line: joined once, not copied at every read."""
    message = messages.error(1, "check", {"kind": "forward", "message": "x" * 32 * 2**20})
    data = messages.encode(message)
    decoder = messages.LineDecoder()
    got = []
    for k in range(0, len(data), 65536):
        got.extend(decoder.feed(data[k : k + 65536]))
    assert got == [message]


def test_an_overlong_line_is_reported_once_and_the_next_line_still_comes(monkeypatch):
    monkeypatch.setattr(messages, "MAX_LINE_BYTES", 100)
    decoder = messages.LineDecoder()
    got = list(decoder.feed(b"x" * 150)) + list(decoder.feed(b"y" * 150 + b"\n" + messages.encode({"a": 1})))
    assert len(got) == 2 and isinstance(got[0], messages.BadLine) and got[1] == {"a": 1}


def test_a_client_session_drops_lines_the_worker_did_not_seal_and_finds_one_written_behind_stray_bytes():
    session = messages.ClientSession()
    worker_key = messages.read_hello_from_bytes(session.hello())
    honest = messages.result(1, "check", {"passed": False})
    forged = messages.encode(messages.result(1, "check", {"passed": True}))
    data = forged + forged[:-1] + messages.seal(honest, worker_key)  # the second one has no line end
    got = [m for k in range(0, len(data), 7) for m in session.feed(data[k : k + 7])]
    assert got == [honest]
    assert len(session.unsealed) == 2 and all('"passed": true' in line.text for line in session.unsealed)


def test_the_hello_is_read_byte_exact_and_a_wrong_one_is_refused():
    session = messages.ClientSession()
    read_end, write_end = os.pipe()
    os.write(write_end, session.hello() + session.encode({"op": "quit"}))
    assert messages.read_hello(read_end) == session.key
    assert os.read(read_end, 4096) == session.encode({"op": "quit"})  # the request stayed in the pipe
    os.write(write_end, b"not a key at all, but just as long as a key line would be, 65 bytes\n")
    assert messages.read_hello(read_end) is None
    os.close(write_end)
    os.close(read_end)
