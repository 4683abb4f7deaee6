"""Line framing and messages: what either end may receive, including what it must refuse."""

from __future__ import annotations

import json

import pytest

from gradviz.protocol import messages
from gradviz.schema.requests import CheckRequest, CodeSource, to_message


def test_messages_round_trip_through_the_decoder_in_any_chunking():
    sent = [
        messages.ready(12, "2.13.0", [{"name": "cpu"}]),
        messages.progress(3, 5, 10),
        messages.result(3, "check", {"passed": True, "text": "ünïcode ✓"}),
        messages.error(4, "check", {"kind": "forward", "message": "boom"}),
    ]
    data = b"".join(messages.encode(m) for m in sent)
    for size in (1, 7, len(data)):
        decoder = messages.LineDecoder()
        got = []
        for k in range(0, len(data), size):
            got.extend(decoder.feed(data[k : k + size]))
        assert got == sent and decoder.pending == b""


@pytest.mark.parametrize(
    ("line", "reason"),
    [(b"hello from print()", "not JSON"), (b"[1, 2, 3]", "not a JSON object"), (b"\xff\xfe{", "not JSON")],
)
def test_a_stray_line_becomes_a_bad_line_not_an_exception(line, reason):
    decoder = messages.LineDecoder()
    (bad,) = list(decoder.feed(line + b"\n"))
    assert isinstance(bad, messages.BadLine) and reason in bad.reason
    assert "not a gradviz message" in bad.describe()
    # and the next good line still comes through
    assert list(decoder.feed(messages.encode(messages.progress(1, 1, 2)))) == [messages.progress(1, 1, 2)]


def test_a_line_without_end_past_the_limit_is_cut_off(monkeypatch):
    monkeypatch.setattr(messages, "MAX_LINE_BYTES", 100)
    decoder = messages.LineDecoder()
    (bad,) = list(decoder.feed(b"x" * 150))
    assert isinstance(bad, messages.BadLine) and "150 bytes long" in bad.reason
    assert decoder.pending == b""


def test_non_finite_numbers_leave_as_strict_json_strings():
    line = messages.encode({"type": "result", "value": [float("nan"), float("-inf")]})
    assert b"NaN" not in line and b"Infinity" not in line  # strict JSON: gradviz.schema.strict_json
    assert json.loads(line)["value"] == ["nan", "-inf"]
    request = CheckRequest(code=CodeSource(source="x"), timeout=2.5)
    assert json.loads(messages.encode(to_message(request, 1, "/tmp/run1")))["timeout"] == 2.5


def test_only_result_and_error_end_a_request():
    assert messages.is_final(messages.result(1, "check", {}))
    assert messages.is_final(messages.error(1, "check", {"kind": "x", "message": ""}))
    assert not messages.is_final(messages.progress(1, 0, 1))
