"""Kink marks, the float64 re-check and the sweep travel through the worker's files unchanged."""

from __future__ import annotations

import json

import numpy as np
import torch

from gradviz.core.check import check_function
from gradviz.core.sweep import sweep_function
from gradviz.schema.report import cell_readout, format_table, result_to_dict
from gradviz.schema.result_files import read_check_result, write_check_result
from gradviz.schema.settings import CheckSettings
from tests.core.why_functions import Abs, Tanh, abs_inputs, random_inputs


def through_files(result, tmp_path):
    return read_check_result(json.loads(json.dumps(write_check_result(result, tmp_path), allow_nan=False)))


def test_kinks_and_sweep_read_back(tmp_path):
    inputs = abs_inputs()
    result = check_function(Abs, inputs)
    result.sweep = sweep_function(Abs, inputs)
    back = through_files(result, tmp_path)
    np.testing.assert_array_equal(back.blocks[0].kinks, result.blocks[0].kinks)
    assert back.sweep.to_dict() == json.loads(json.dumps(result.sweep.to_dict()))
    data = result_to_dict(result)
    assert data["blocks"][0]["kinks"] == 3 and data["blocks"][0]["kink_cells"][0] == "out0[0] / x[0]"
    assert data["blocks"][0]["sweep"]["verdict"] == "non_differentiable"
    assert cell_readout(result, result.blocks[0], 0, 0).endswith("(fails: > 1e-05; non-differentiable here (kink))")
    assert "kink" not in cell_readout(result, result.blocks[0], 1, 1)
    table = format_table(result)
    assert "kinks: 3 failing cell(s) non-differentiable here" in table
    assert "sweep: non-differentiable near this point" in table


def test_precision_reads_back(tmp_path):
    result = check_function(Tanh, random_inputs((3, 4), dtype=torch.float32), CheckSettings(dtype="float32"))
    assert result.precision is not None
    back = through_files(result, tmp_path)
    assert back.precision == result.precision
    assert result_to_dict(result)["precision"]["verdict"] == "precision"


def test_a_passing_result_has_no_kink_files(tmp_path):
    result = check_function(Tanh, random_inputs((3,)))
    summary = write_check_result(result, tmp_path)
    assert "kinks" not in summary["blocks"][0]["files"]
    assert read_check_result(summary).blocks[0].kinks is None
