"""One encoding of non-finite numbers ("nan", "inf", "-inf") from the check to the worker protocol,
the report, report.json; version stamps on report.json and sessions; the shipped schemas."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
import torch
from torch.autograd import Function

import gradviz
from gradviz.protocol import messages
from gradviz.schema.json_schemas import SCHEMA_VERSION, load
from gradviz.schema.result_files import read_check_result, write_check_result
from gradviz.schema.session import Session, load_session, save_session
from gradviz.schema.strict_json import decode, dumps, encode


class NegInfBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * float("-inf")  # diagonal -inf, off-diagonal 0 * -inf = nan


@pytest.fixture(scope="module")
def report():
    """A report whose probed cells hold -inf and nan (a tiny memory limit makes the block "large")."""
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    return gradviz.check(NegInfBackward, (x,), raise_exception=False, max_memory_mb=1e-5)


def analytic_cells(report_dict: dict) -> list:
    return [cell["analytic"] for block in report_dict["large_blocks"] for cell in block["failing_cells"]]


def test_encode_and_decode_keep_the_sign():
    for value in (math.inf, -math.inf, 1.5, -0.0):
        assert decode(json.loads(dumps(encode(value)))) == value
    assert math.isnan(decode(json.loads(dumps(encode(math.nan)))))
    assert [encode(v) for v in (math.inf, -math.inf, math.nan)] == ["inf", "-inf", "nan"]
    assert math.isnan(decode(None))  # what older versions wrote for any non-finite number
    with pytest.raises(ValueError):
        decode("Infinity")


def test_dumps_writes_a_non_finite_number_that_slipped_through_the_same_way():
    text = dumps({"a": [1.0, {"b": -math.inf}], "c": (math.nan,)})
    assert json.loads(text) == {"a": [1.0, {"b": "-inf"}], "c": ["nan"]}


def test_report_json_validates_and_keeps_the_sign(report):
    data = json.loads(report.to_json())
    jsonschema.Draft202012Validator(load("report")).validate(data)
    assert (data["schema_version"], data["gradviz_version"]) == (SCHEMA_VERSION, gradviz.__version__)
    cells = analytic_cells(data)
    assert "-inf" in cells and "nan" in cells
    assert {decode(v) for v in cells if v != "nan"} == {-math.inf}


def test_report_through_the_worker_protocol_keeps_the_sign(report, tmp_path):
    """What the worker sends: write_check_result's summary in a protocol line, read back."""
    summary = write_check_result(report.result, tmp_path)
    line = messages.encode(messages.result(1, "check", {"report": summary}))
    back = read_check_result(messages.parse_line(line)["result"]["report"])
    sent = [c.analytic for block in report.result.large_blocks for c in block.cells]
    got = [c.analytic for block in back.large_blocks for c in block.cells]
    assert -math.inf in sent and any(math.isnan(v) for v in sent)
    assert [str(v) for v in got] == [str(v) for v in sent]  # -inf stays -inf, nan stays nan


def test_saved_report_json_validates(report, tmp_path):
    report.save(tmp_path)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(load("report")).validate(data)
    assert (data["schema_version"], data["gradviz_version"]) == (SCHEMA_VERSION, gradviz.__version__)
    assert "-inf" in analytic_cells(data)


def test_sessions_carry_the_versions_and_older_ones_still_open(tmp_path):
    path = tmp_path / "new.gradviz"
    save_session(path, Session(code="x = 1\n", run={"eps": 1e-6}))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["schema_version"], data["gradviz_version"]) == (SCHEMA_VERSION, gradviz.__version__)
    old = tmp_path / "old.gradviz"  # as gradviz wrote it before the stamp
    old.write_text(json.dumps({"format": "gradviz-session", "version": 1, "code": "x = 1\n", "run": {"eps": 1e-6}}))
    assert load_session(old) == load_session(path)


def test_the_error_schema_names_every_error_kind():
    from gradviz.schema.errors import ErrorKind

    assert load("error")["properties"]["error"]["properties"]["kind"]["enum"] == [k.value for k in ErrorKind]
