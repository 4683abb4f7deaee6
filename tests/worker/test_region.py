"""The ``region`` request through the real worker: the cells around what a check of a block too
large to hold found, at the very inputs that check used, held to PyTorch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gradviz.schema.requests import CheckRequest, CodeSource, Region, RegionRequest
from gradviz.schema.result_files import read_region
from gradviz.schema.results import region_around
from gradviz.schema.settings import CheckSettings
from tests.core.test_region import torch_region
from tests.real_world import oracle
from tests.sources import LARGE_SIN, LARGE_SIN_WRONG_AT


def test_a_region_request_computes_the_cells_around_the_found_one_at_the_checks_inputs(shared_worker, write_source):
    path = write_source(LARGE_SIN)
    code, settings = CodeSource(path=str(path)), CheckSettings(seed=3)  # not the default seed: the inputs follow it
    check = shared_worker.request(CheckRequest(code, settings, timeout=120, arrays=False, graph=False))
    assert check.ok, check.error
    (large,) = check.result["large_blocks"]
    (cell,) = large["failing_cells"]
    assert (cell["row"], cell["col"]) == (LARGE_SIN_WRONG_AT, LARGE_SIN_WRONG_AT)
    rows, cols = region_around(cell["row"], cell["col"], (100_000, 100_000))
    spec = Region(output=0, input=0, row0=rows.start, col0=cols.start, rows=len(rows), cols=len(cols))
    reply = shared_worker.request(RegionRequest(code, spec, settings, timeout=120))
    assert reply.ok, reply.error
    assert reply.progress and reply.progress[-1][0] == reply.progress[-1][1] == len(rows) + len(cols)
    got = read_region(reply.result)  # before the worker's files go with it
    assert (got.row0, got.col0, got.shape) == (rows.start, cols.start, (len(rows), len(cols)))
    local = (cell["row"] - rows.start, cell["col"] - cols.start)
    # the same inputs in another process: the very values the check's search computed
    assert got.comparison.analytic[local] == cell["analytic"] and got.comparison.numerical[local] == cell["numerical"]
    assert got.worst == (cell["row"], cell["col"]) and got.comparison.n_failing == 1
    module = oracle.load_module(path)
    (x,) = oracle.example_args(module, seed=3)
    analytic, numerical = torch_region(module.LargeSin, x, rows, cols)
    np.testing.assert_array_equal(got.comparison.analytic, analytic)
    np.testing.assert_array_equal(got.comparison.numerical, numerical)


def test_a_region_outside_the_block_is_refused_by_name_and_the_worker_serves_on(shared_worker, write_source):
    path = write_source(LARGE_SIN)
    outside = Region(output=0, input=0, row0=99_990, col0=0, rows=32, cols=32)
    code = CodeSource(path=str(path))
    reply = shared_worker.request(RegionRequest(code, outside, timeout=120))
    assert reply.kind == "settings"
    assert "Rows 99990..100021 are not inside block out0 / x (100,000 × 100,000)" in reply.error["message"]
    inside = replace(outside, row0=0)  # a malformed region never leaves a client: test_typed_requests
    assert shared_worker.request(RegionRequest(code, inside, timeout=120)).ok
