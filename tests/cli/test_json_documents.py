"""What a script reads from ``gradviz ... --json``: every document validates against the schema that
ships in the package, carries its versions, and writes non-finite numbers as "inf"/"-inf"/"nan"."""

from __future__ import annotations

import json
import math
import textwrap

import jsonschema
import pytest

from gradviz import __version__
from gradviz.schema.json_schemas import SCHEMA_VERSION, load
from gradviz.schema.strict_json import decode
from tests.cli.runner import check_document, gradviz

NON_FINITE = textwrap.dedent(
    """
    import torch
    from torch.autograd import Function


    class NegInfBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * float("-inf")  # the numerical Jacobian is 2: an infinite error


    def example_inputs(device, dtype):
        return (torch.rand(3, device=device, dtype=dtype, requires_grad=True),)
    """
)


def document(out, schema: str) -> dict:
    """The one JSON line on stdout, validated against the shipped schema ``schema``."""
    data = json.loads(out.stdout)
    jsonschema.Draft202012Validator(load(schema)).validate(data)
    assert (data["schema_version"], data["gradviz_version"]) == (SCHEMA_VERSION, __version__)
    return data


@pytest.fixture
def non_finite(tmp_path):
    path = tmp_path / "neg_inf_backward.py"
    path.write_text(NON_FINITE, encoding="utf-8")
    return path


def test_schemas_are_valid_draft_2020_12():
    for name in ("check", "report", "sweep", "memory", "graph", "error"):
        jsonschema.Draft202012Validator.check_schema(load(name))


def test_check_with_an_infinite_backward_writes_inf_as_a_string(cli, non_finite):
    out = cli("check", str(non_finite), "--json")
    assert out.returncode == 1, out.stderr
    data = document(out, "check")
    assert data["blocks"][0]["max_abs_error"] == "inf" and "Infinity" not in out.stdout
    assert decode(data["blocks"][0]["max_abs_error"]) == math.inf
    with pytest.raises(jsonschema.ValidationError):  # null, as older versions wrote some non-finite numbers
        check_document("check", {**data, "blocks": [{**data["blocks"][0], "max_abs_error": None}]})


def test_graph_keeps_the_sign_of_an_infinite_gradient(cli, non_finite):
    out = cli("graph", str(non_finite), "--json")
    assert out.returncode == 0, out.stderr
    data = document(out, "graph")
    norms = [g["norm"] for flow in data["flows"] for g in flow["grad_inputs"] if g]
    values = [v for flow in data["flows"] for g in flow["grad_inputs"] if g and g["values"] for v in g["values"]]
    assert "inf" in norms and "-inf" in values  # the worker sent them through the protocol as strings
    flow = data["flows"][0]
    with pytest.raises(jsonschema.ValidationError):  # older versions wrote null here, losing the sign
        check_document("graph", {**data, "flows": [{**flow, "grad_outputs": [{**flow["grad_outputs"][0], "norm": None}]}]})


def test_every_cli_test_validates_its_json_documents():
    """tests.cli.runner checks each --json output (check of passing and failing builtins, with
    --sweep; sweep; memory; graph; errors) against the schema: a document without its version is
    refused there."""
    good = json.loads(gradviz("check", "no_such_example", "--json").stdout)
    check_document("check", good)
    for broken in ({k: v for k, v in good.items() if k != "schema_version"}, {**good, "gradviz_version": None}):
        with pytest.raises(jsonschema.ValidationError):
            check_document("check", broken)
    with pytest.raises(jsonschema.ValidationError):
        check_document("memory", {"schema_version": SCHEMA_VERSION, "gradviz_version": __version__, "layers": 1})


def test_an_error_is_a_versioned_document_with_exit_2(tmp_path):
    out = gradviz("check", str(tmp_path / "missing.py"), "--json")
    assert out.returncode == 2
    assert document(out, "error")["error"]["kind"] == "import"
