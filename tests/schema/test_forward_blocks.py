"""The forward blocks' contract: in the verdict, in the JSON (schema "check"), in the worker's files."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import numpy as np
import torch

import gradviz
from gradviz.schema.json_schemas import load, stamp
from gradviz.schema.report import result_to_dict
from gradviz.schema.result_files import read_check_result, write_check_result


def _result_with_forward_blocks(wrong: bool):
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    result = gradviz.check(torch.sin, (x,), raise_exception=False).result
    forward = []
    for b in result.blocks:
        f = dataclasses.replace(b, analytic=b.analytic * (2.0 if wrong else 1.0))
        if wrong:
            f.failing = np.ones_like(b.failing)
            f.n_failing = int(f.failing.sum())
        forward.append(f)
    result.forward_blocks = forward
    return result


def test_a_failing_forward_block_fails_the_verdict():
    assert _result_with_forward_blocks(wrong=False).passed
    assert not _result_with_forward_blocks(wrong=True).passed


def test_forward_blocks_validate_and_round_trip_through_the_files(tmp_path):
    result = _result_with_forward_blocks(wrong=True)
    document = stamp(result_to_dict(result))
    jsonschema.Draft202012Validator(load("check")).validate(json.loads(json.dumps(document)))
    assert document["forward_blocks"][0].keys() == document["blocks"][0].keys()
    summary = write_check_result(result, tmp_path)
    assert (tmp_path / "forward_analytic_o0_i0.npy").exists()
    back = read_check_result(json.loads(json.dumps(summary)))
    assert not back.passed
    np.testing.assert_array_equal(back.forward_blocks[0].analytic, result.forward_blocks[0].analytic)
    np.testing.assert_array_equal(back.blocks[0].analytic, result.blocks[0].analytic)
