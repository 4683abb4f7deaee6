"""The typed requests: every field travels, and a drifted key is refused by name, never ignored."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from gradviz.schema import requests
from gradviz.schema.errors import SettingsError
from gradviz.schema.json_schemas import load
from gradviz.schema.requests import (
    AuditRequest,
    CheckRequest,
    CodeSource,
    GraphRequest,
    MemoryRequest,
    Region,
    RegionRequest,
    SweepRequest,
)
from gradviz.schema.settings import CheckSettings, MemoryOptions, SweepOptions

CODE = CodeSource(source="class F: ...\n", filename="<editor>", function="F")
TARGET = CodeSource(path="/x/ops.py", target="/x/ops.py:Cube", inputs_path="/x/in.pt", function="Cube", parameters=("w",))
EXAMPLES = [
    CheckRequest(code=CODE),
    CheckRequest(
        code=TARGET,
        settings=CheckSettings.for_dtype("float32", seed=7, fast_mode=True),
        timeout=20,
        sweep=SweepOptions(block=(0, 1)),
        arrays=False,
        graph=False,
        report=True,
        save="/tmp/out",
        overwrite=True,
        batched_crash=True,
    ),
    SweepRequest(code=CODE, options=SweepOptions(block=(1, 0), worst_cells=2), timeout=3.5),
    GraphRequest(code=CodeSource(path="/x/ops.py", function="Cube", parameters=True)),
    RegionRequest(code=CODE, region=Region(output=0, input=1, row0=4, col0=8, rows=16, cols=32)),
    MemoryRequest(options=MemoryOptions(layers=2, shape=(2, 3, 8, 8)), sweep=False),
    AuditRequest(code=CodeSource(path="/x/model.py", function="Block"), max_checks=5, node_files=True),
]


def through_json(message: dict) -> dict:
    return json.loads(json.dumps(message))


@pytest.mark.parametrize("request_", EXAMPLES, ids=lambda r: type(r).__name__)
def test_every_field_survives_the_line(request_):
    message = through_json(requests.to_message(request_, 7, "/tmp/run7"))
    envelope = requests.from_message(message)
    assert (envelope.id, envelope.out_dir) == (7, "/tmp/run7")
    assert envelope.request == request_
    jsonschema.validate(message, load("request"))


def test_every_kind_has_its_op_and_a_shared_code_source():
    assert set(requests.RUN_OPS) == {"check", "sweep", "graph", "region", "memory", "audit"}
    for cls in requests.REQUEST_TYPES.values():
        hints = {f.name: f.type for f in dataclasses.fields(cls)}
        assert "code" in hints or cls is MemoryRequest


@pytest.mark.parametrize("request_", EXAMPLES, ids=lambda r: type(r).__name__)
def test_a_missing_key_is_refused_by_name(request_):
    message = through_json(requests.to_message(request_, 1, "/tmp/run1"))
    for key in [k for k in message if k not in requests.ENVELOPE]:
        broken = {k: v for k, v in message.items() if k != key}
        with pytest.raises(SettingsError, match=f"missing {key}"):
            requests.from_message(broken)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, load("request"))


def test_the_drift_that_lost_the_why_panels_block_is_refused():
    """A sweep's options sent as ``sweep_options`` (a check's old key) is an unknown key, not a default."""
    message = through_json(requests.to_message(SweepRequest(code=CODE), 1, "/tmp/run1"))
    message["sweep_options"] = message.pop("options")
    with pytest.raises(SettingsError, match="missing options; unknown sweep_options"):
        requests.from_message(message)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("arrays", "yes", "arrays cannot be 'yes'"),
        ("timeout", True, "timeout cannot be True"),
        ("graph", None, "graph may not be null"),
        ("code", {"source": 1}, "CodeSource: missing"),
        ("settings", {"epz": 1e-6}, "Unknown setting"),
        ("sweep", {"steps": []}, "at least one step"),
    ],
)
def test_a_mistyped_value_is_refused_by_name(key, value, words):
    message = through_json(requests.to_message(CheckRequest(code=CODE), 1, "/tmp/run1"))
    message[key] = value
    with pytest.raises(SettingsError, match=words):
        requests.from_message(message)


def test_nested_parts_are_strict_too():
    message = through_json(requests.to_message(EXAMPLES[4], 1, "/tmp/run1"))
    message["region"]["depth"] = 3
    with pytest.raises(SettingsError, match="Region: unknown depth"):
        requests.from_message(message)
    message["region"].pop("depth")
    message["region"]["rows"] = 0
    with pytest.raises(SettingsError, match="rows must be 1 or more"):
        requests.from_message(message)


@pytest.mark.parametrize(
    "message",
    [
        [],
        {"op": "train", "id": 1, "out_dir": "/tmp"},
        {"op": "check", "id": "1", "out_dir": "/tmp"},
        {"op": "check", "id": True, "out_dir": "/tmp"},
        {"op": "check", "id": 1},
    ],
)
def test_a_broken_envelope_is_refused(message):
    with pytest.raises(SettingsError):
        requests.from_message(message)


def test_code_must_name_something():
    message = through_json(requests.to_message(CheckRequest(code=CODE), 1, "/tmp/run1"))
    message["code"] = {name: None for name in message["code"]}
    with pytest.raises(SettingsError, match="names no code"):
        requests.from_message(message)


def test_the_shipped_schema_is_the_one_the_dataclasses_make():
    assert load("request") == through_json(requests.request_schema())
