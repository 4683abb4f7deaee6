"""Every kind of request, typed as the CLI and the window build it, through one real worker.

Each test sets options away from their defaults and finds each of them in the answer, with the
numbers computed here by PyTorch: an option sent under one name and read under another (or not
sent at all) fails here, whatever a fake worker would have said. The last tests send raw lines
with a misspelt or missing key: refused at once, by name, and nothing runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gradviz.cli.request import code_request
from gradviz.schema.requests import (
    AuditRequest,
    CheckRequest,
    CodeSource,
    GraphRequest,
    MemoryRequest,
    Region,
    RegionRequest,
    SweepRequest,
    to_message,
)
from gradviz.schema.result_files import read_region
from gradviz.schema.settings import CheckSettings, MemoryOptions, SweepOptions
from gradviz.schema.time_left import BLOCK_UNIT, CHECK_UNIT
from gradviz.worker.client import WorkerClient
from tests.paths import ROOT
from tests.real_world import oracle
from tests.worker.raw_worker import RawWorker

# x^3 * y: the central difference of x^3 is 3x^2 + eps^2, so the error of block (0, 0) shows eps
CUBE_TIMES = """
import torch
from torch.autograd import Function


class CubeTimes(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * x * x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return 3 * x * x * y * g, x * x * x * g


def example_inputs(device, dtype):
    return (
        torch.randn(4, device=device, dtype=dtype, requires_grad=True),
        torch.randn(4, device=device, dtype=dtype, requires_grad=True),
    )
"""
SEED, EPS = 5, 1e-2  # neither is the default: the answers below follow them
MODELS = ROOT / "tests" / "core" / "audit_models.py"


@pytest.fixture(scope="module")
def worker():
    with WorkerClient(output=None) as client:
        yield client


@pytest.fixture(scope="module")
def cube_times(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("typed") / "cube_times.py"
    path.write_text(CUBE_TIMES)
    return path


def torch_blocks(path: Path, *, seed: int, eps: float):
    """Both Jacobians of CubeTimes at the inputs ``seed`` draws: PyTorch's, and central differences."""
    module = oracle.load_module(path)
    args = oracle.example_args(module, seed=seed)
    return oracle.analytical_jacobian(module.CubeTimes, args), oracle.numerical_jacobian(module.CubeTimes, args, eps)


def test_a_check_request_runs_with_its_settings_its_sweep_and_its_graph(worker, cube_times):
    settings = CheckSettings(seed=SEED, eps=EPS)
    request = CheckRequest(
        code_request(str(cube_times), None, None),  # as ``gradviz check FILE`` names it
        settings,
        timeout=120,
        sweep=SweepOptions(block=(0, 1), worst_cells=2),
        arrays=False,
        graph=True,
        report=True,
    )
    reply = worker.request(request)
    assert reply.ok, reply.error
    result = reply.result
    analytic, numerical = torch_blocks(cube_times, seed=SEED, eps=EPS)
    block = next(b for b in result["blocks"] if (b["output"], b["input"]) == (0, 0))
    expected = np.abs(analytic[0, 0] - numerical[0, 0]).max()  # eps^2 |y|: seed and eps both reached it
    assert block["max_abs_error"] == pytest.approx(expected, rel=1e-6)
    assert result["settings"]["seed"] == SEED and result["tolerance"]["eps"] == EPS
    swept = {(b["output"], b["input"]): b for b in result["sweep"]["blocks"]}
    assert swept[0, 1]["errors"] is not None and len(swept[0, 1]["cells"]) == 2  # the block asked for
    assert swept[0, 0]["errors"] is None  # ... and no other, cell by cell
    assert result["graph"]["nodes"][0]["class"] == "CubeTimes" and result["graph_error"] is None
    assert result["report"]["function"] == "CubeTimes" and "CubeTimes" in result["table"]


def test_a_checks_progress_messages_say_what_they_count(worker, cube_times):
    """Rows and columns of the Jacobians for a full check, blocks for one that screens blocks
    without building them (fast mode, as the window sends it), to the last unit."""
    code = code_request(str(cube_times), None, None)
    full = worker.request(CheckRequest(code, CheckSettings(seed=SEED), timeout=120, arrays=False))
    assert full.ok, full.error
    assert set(full.progress_units) == {CHECK_UNIT} and full.progress[-1][0] == full.progress[-1][1]
    fast = worker.request(
        CheckRequest(code, CheckSettings(seed=SEED, fast_mode=True), timeout=120, arrays=False, maps="deferred")
    )
    assert fast.ok, fast.error
    blocks = len(fast.result["outputs"]) * len(fast.result["inputs"])
    assert set(fast.progress_units) == {BLOCK_UNIT} and fast.progress[-1] == (blocks, blocks)


def test_a_sweep_request_sweeps_the_block_it_names(worker, cube_times):
    """As the window's Why? panel asks: editor text, a block, a seed."""
    code = CodeSource(source=CUBE_TIMES, filename="<editor>", function="CubeTimes")
    options = SweepOptions(block=(0, 1), worst_cells=1, max_columns=2)
    reply = worker.request(SweepRequest(code, CheckSettings(seed=SEED, eps=EPS), timeout=120, options=options))
    assert reply.ok, reply.error
    sweep = reply.result["sweep"]
    assert sweep["function"] == "CubeTimes" and sweep["eps"] == EPS
    swept = {(b["output"], b["input"]): b for b in sweep["blocks"]}
    assert swept[0, 0]["errors"] is None and len(swept[0, 1]["cells"]) == 1
    assert swept[0, 1]["columns"] == 2  # max_columns: of the 4 columns, 2 at every step
    analytic, _ = torch_blocks(cube_times, seed=SEED, eps=EPS)
    # block (0, 1) is diag(x^3): its curvature along the sweep's direction is 0, at any seed
    assert np.allclose(analytic[0, 1], np.diag(np.diag(analytic[0, 1])))
    assert swept[0, 1]["remainder_slope"] is None


def test_a_graph_request_builds_the_forward_with_its_settings(worker, cube_times):
    settings = CheckSettings.for_dtype("float32", seed=SEED)
    reply = worker.request(GraphRequest(code_request(str(cube_times), "CubeTimes", None), settings, timeout=120))
    assert reply.ok, reply.error
    (custom,) = [node for node in reply.result["graph"]["nodes"] if node["kind"] == "custom"]
    assert custom["class"] == "CubeTimes"
    assert [(s["dtype"], s["shape"]) for s in custom["saved"]] == [("float32", [4]), ("float32", [4])]
    assert "CubeTimes" in reply.result["table"]


def test_a_region_request_computes_that_rectangle_at_the_checks_inputs(worker, cube_times):
    code = CodeSource(source=CUBE_TIMES, filename="<editor>", function="CubeTimes")
    region = Region(output=0, input=0, row0=1, col0=0, rows=2, cols=3)
    reply = worker.request(RegionRequest(code, region, CheckSettings(seed=SEED, eps=EPS), timeout=120))
    assert reply.ok, reply.error
    got = read_region(reply.result)
    assert (got.row0, got.col0, got.shape) == (1, 0, (2, 3))
    analytic, numerical = torch_blocks(cube_times, seed=SEED, eps=EPS)
    np.testing.assert_allclose(got.comparison.analytic, analytic[0, 0][1:3, 0:3], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.comparison.numerical, numerical[0, 0][1:3, 0:3], rtol=1e-9, atol=1e-12)


def test_a_memory_request_studies_the_stack_it_names(worker):
    options = MemoryOptions(layers=2, shape=(2, 3, 8, 8), out_channels=4, kernel=3, dtype="float64")
    reply = worker.request(MemoryRequest(options, sweep=True, timeout=120))
    assert reply.ok, reply.error
    study = reply.result["study"]
    assert study["layers"] == 2 and study["shape"] == [2, 3, 8, 8]
    x = torch.zeros(options.shape, dtype=torch.float64)
    (saved_input,) = [t for t in study["variants"]["fused"]["tensors"] if t["name"] == "x (the input)"]
    assert saved_input["bytes"] == x.numel() * x.element_size()  # the shape and the dtype asked for
    # 8 -> 6 -> 4 -> 2: three 3x3 convs fit; batches 1, N and 4N
    assert {(row["layers"], row["batch"]) for row in reply.result["sweep"]} == {
        (layers, batch) for layers in (1, 2, 3) for batch in (1, 2, 8)
    }
    assert reply.progress[-1] == (4, 4)
    alone = worker.request(MemoryRequest(options, sweep=False, timeout=120))
    assert alone.ok and alone.result["sweep"] == [] and alone.progress == [(1, 1)]


def test_an_audit_request_checks_at_most_max_checks_calls_and_writes_their_files(worker):
    code = code_request(f"{MODELS}:TwoNorms", None, None)  # as ``gradviz audit FILE:NAME`` names it
    reply = worker.request(AuditRequest(code, CheckSettings(seed=0), timeout=120, max_checks=1, node_files=True))
    assert reply.ok, reply.error
    audit, nodes = reply.result["audit"], reply.result["nodes"]
    assert audit["checked"] == 1 and audit["not_checked"] == ["rest → BadRMSNormFn, call 2 of 2"]
    assert [node["node"]["status"] for node in nodes] == ["passed", "not checked"]
    checked, skipped = nodes
    files = [Path(path) for block in checked["files"]["blocks"] for path in block["files"].values()]
    assert files and all(path.is_file() for path in files) and "files" not in skipped


HANGS = CUBE_TIMES.replace("        ctx.save_for_backward(x, y)\n", "        while True:\n            pass\n", 1)
MARKS = "open({mark!r}, 'w').close()\n" + CUBE_TIMES  # a run of this file leaves the mark


def misspelt(message: dict, where: list[str], old: str, new: str) -> dict:
    """``message`` with the key ``old`` of the part at ``where`` renamed ``new``."""
    part = message
    for key in where:
        part = part[key]
    part[new] = part.pop(old)
    return message


def test_a_request_line_with_a_misspelt_key_is_refused_at_once_by_name_and_nothing_runs(tmp_path):
    mark = tmp_path / "ran"
    marks = tmp_path / "marks.py"
    marks.write_text(MARKS.format(mark=str(mark)))
    hangs = tmp_path / "hangs.py"
    hangs.write_text(HANGS)
    good = CheckRequest(CodeSource(path=str(marks)), arrays=False, graph=False)
    region = RegionRequest(CodeSource(path=str(marks)), Region(0, 0, 0, 0, 1, 1))
    worker = RawWorker()
    try:
        # a run in progress: the bad lines are answered while it runs, not after it
        worker.send(to_message(CheckRequest(CodeSource(path=str(hangs)), arrays=False), 1, str(tmp_path / "run1")))
        bad = {
            2: (misspelt(to_message(good, 2, str(tmp_path)), [], "arrays", "arrray"), ["arrays", "arrray"]),
            3: (misspelt(to_message(good, 3, str(tmp_path)), ["settings"], "seed", "sed"), ["sed"]),
            4: (misspelt(to_message(good, 4, str(tmp_path)), ["code"], "inputs_path", "inputs"), ["inputs"]),
            5: ({**to_message(region, 5, str(tmp_path)), "region": {"output": 0}}, ["row0", "col0", "rows", "cols"]),
        }
        for message, _ in bad.values():
            worker.send(message)
        for request_id, (_, names) in bad.items():
            answer = worker.answer(request_id, 30)
            assert answer["type"] == "error" and answer["error"]["kind"] == "settings", answer
            assert all(name in answer["error"]["message"] for name in names), answer["error"]["message"]
        worker.send({"op": "cancel", "id": 1})
        assert worker.answer(1, 30)["error"]["kind"] == "cancelled"  # it was running all along
        assert not mark.exists()  # none of the refused requests ran the file
        worker.send(to_message(good, 6, str(tmp_path / "run6")))
        assert worker.answer(6, 120)["type"] == "result" and mark.exists()  # the worker serves on
        assert worker.quit() == 0
    finally:
        worker.kill()
