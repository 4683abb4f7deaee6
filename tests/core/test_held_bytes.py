"""What a check holds: the error map and failing mask only when something reads them,
and a peak within the bytes the size guard promises, computed from the guard's own constants."""

from __future__ import annotations

import tracemalloc

import numpy as np
import torch

from gradviz.core.check import check_function
from gradviz.core.inputs import PreparedInputs, prepare_inputs
from gradviz.core.large import held_bytes
from gradviz.schema.report import format_table, result_to_dict
from gradviz.schema.result_files import read_check_result, write_check_result
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import CheckSettings
from tests.core.functions import Exp

CHUNK = 2**20  # small chunk buffers, so the guard's allowance for them cannot hide a 5-byte-a-cell map


def _inputs(n: int) -> PreparedInputs:
    x = torch.rand(n, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).requires_grad_()
    return prepare_inputs((x,), None, None, ["x"])


def _json_style_check(n: int) -> tuple[CheckResult, int, int]:
    """``gradviz check --json`` in process: the check, its JSON and its table, nothing that asks for
    arrays; the settings' limit just fits the case. The result, its cells and the peak of NumPy's
    allocations (tracemalloc sees them; the Jacobians and maps are NumPy arrays)."""
    cells = n * n
    settings = CheckSettings(chunk_bytes=CHUNK, max_jacobian_bytes=held_bytes(cells, CHUNK))
    check_function(Exp, _inputs(8), settings)  # first-call imports and caches stay out of the peak
    inputs = _inputs(n)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = check_function(Exp, inputs, settings)
        result_to_dict(result)
        format_table(result)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, cells, peak


def test_a_check_nobody_asks_arrays_from_holds_only_the_jacobians():
    """Just under the guard, the JSON path's peak stays within what the guard promises for a check
    that builds no maps: both Jacobians and two chunk buffers (not the 21 bytes a cell of every map)."""
    result, cells, peak = _json_style_check(1024)
    assert result.passed and not result.large_blocks  # the case fits the guard: the full path ran
    assert held_bytes(cells + 1, CHUNK) > result.settings.max_jacobian_bytes  # one cell more would not fit
    assert peak <= held_bytes(cells, CHUNK, maps=False), (peak, held_bytes(cells, CHUNK, maps=False))
    assert not any(b.maps_held for b in result.blocks)


def test_maps_are_built_when_read_and_equal_the_rule():
    """Reading ``error`` or ``failing`` builds both once; the files the window reads carry them."""
    result = check_function(Exp, _inputs(6), CheckSettings())
    (block,) = result.blocks
    assert not block.maps_held
    failing = block.failing
    assert block.maps_held and block.failing is failing  # built once
    a, n = torch.from_numpy(block.analytic), torch.from_numpy(block.numerical)
    s = result.settings
    np.testing.assert_array_equal(failing, ~torch.isclose(a, n, rtol=s.rtol, atol=s.atol).numpy())
    np.testing.assert_array_equal(block.error, (a - n).abs().to(torch.float32).numpy())


def test_the_window_files_carry_the_maps(tmp_path):
    result = check_function(Exp, _inputs(5), CheckSettings())
    back = read_check_result(write_check_result(result, tmp_path))
    (block,) = back.blocks
    assert block.maps_held  # read from files, never rebuilt
    np.testing.assert_array_equal(block.error, result.blocks[0].error)
    np.testing.assert_array_equal(block.failing, result.blocks[0].failing)
