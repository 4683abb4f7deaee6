"""``gradviz audit`` (in a real process where its working folder is checked, else in this one with
the module's worker, the ``cli`` fixture): the model runs in the worker, the table lists the failing
nodes first, ``--json`` gives one document per node (its report a valid check document) and a
summary; each node's verdict is gradcheck's at the inputs the model gave it (the oracle records
them in this process); exit 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from gradviz.schema.json_schemas import stamp
from tests.cli.runner import check_document, gradviz
from tests.core import audit_models
from tests.core.audit_oracle import record_calls
from tests.paths import ROOT

MODELS = ROOT / "tests" / "core" / "audit_models.py"
SEED = 0  # the CLI's default seed: the model is built and example_inputs drawn under it


def _oracle(factory) -> list[tuple[str, str, bool]]:
    """(function, verdict) of every differentiated call, as the CLI's seed makes the inputs."""
    torch.manual_seed(SEED)
    model = factory()
    (x,) = audit_models.example_inputs("cpu", torch.float64)
    return [(c.name, c.gradcheck()) for c in record_calls(model, x) if c.differentiated]


def test_failing_model_from_a_file_matches_gradcheck_node_by_node(tmp_path):
    out = gradviz("audit", f"{MODELS}:capped_twin", "--json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    documents = [json.loads(line) for line in out.stdout.splitlines()]
    *nodes, summary = documents
    assert summary["audit"]["passed"] is False and summary["audit"]["checked"] == len(nodes) == 11
    assert summary["audit"]["failing"] == ["head.act → BadLeakyCapFn, call 2 of 2"]
    assert [(d["node"]["function"], d["node"]["passed"]) for d in nodes] == _oracle(audit_models.capped_twin)
    for d in nodes:
        check_document("check", stamp(d["report"]))
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_fast_mode_gives_each_nodes_verdict_first_and_maps_only_where_it_fails(cli):
    """``--fast-mode``: each node's verdict is gradcheck(fast_mode=True)'s at its inputs; a passing
    node builds no Jacobian (its maps deferred), the failing one has its failing cells."""
    out = cli("audit", f"{MODELS}:capped_twin", "--fast-mode", "--json")
    assert out.returncode == 1, out.stderr
    *nodes, summary = [json.loads(line) for line in out.stdout.splitlines()]
    torch.manual_seed(SEED)
    (x,) = audit_models.example_inputs("cpu", torch.float64)
    oracle = [(c.name, c.gradcheck(fast_mode=True)) for c in record_calls(audit_models.capped_twin(), x) if c.differentiated]
    assert [(d["node"]["function"], d["node"]["passed"]) for d in nodes] == oracle
    assert any(not passed for _, passed in oracle) and any(passed for _, passed in oracle)
    for d in nodes:
        check_document("check", stamp(d["report"]))
        assert d["report"]["deferred_maps"] is d["node"]["passed"]  # maps for the failing node only
    assert summary["audit"]["failing"] == ["head.act → BadLeakyCapFn, call 2 of 2"]


def test_table_lists_the_failing_node_first(cli):
    out = cli("audit", f"{MODELS}:TwoNorms")
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1].startswith("rest → BadRMSNormFn, call 2 of 2") and "failed" in lines[1]
    assert lines[2].startswith("first → BadRMSNormFn, call 1 of 2") and "passed" in lines[2]
    assert "Built-in PyTorch operations" in out.stdout


def test_module_target_that_passes_exits_0(cli):
    out = cli("audit", "tests.core.audit_models:transformer", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert all(verdict for _, verdict in _oracle(audit_models.transformer))
    assert "PASSED: transformer, all 11 checked" in out.stdout


def test_the_model_runs_in_the_worker_not_in_the_cli(tmp_path):
    pid_file = tmp_path / "pid"
    (tmp_path / "model.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import torch
            from tests.core.audit_models import LeakyCapFn

            def model():
                def forward(x):
                    open({str(pid_file)!r}, "w").write(str(os.getpid()))
                    return LeakyCapFn.apply(x)
                return forward

            def example_inputs(device, dtype):
                return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = subprocess.Popen(
        [sys.executable, "-m", "gradviz", "audit", f"{tmp_path / 'model.py'}:model"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, stderr = cli.communicate(timeout=300)
    assert cli.returncode == 0, stderr
    assert int(pid_file.read_text()) != cli.pid


BROKEN = '''
import torch
from tests.core.audit_models import LeakyCapFn


class Broken(torch.nn.Module):
    def forward(self, x):
        y = LeakyCapFn.apply(x)
        return y @ torch.ones(5, 5, dtype=y.dtype)


class Sized(torch.nn.Module):
    def __init__(self, width):
        super().__init__()


def plain():
    return torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh())


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),)
'''


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Broken", "The model's forward raised RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
        ("Sized", "Sized(width) needs arguments, but gradviz builds the model by calling Sized() with none"),
        ("plain", "Nothing to audit: plain's forward calls no custom torch.autograd.Function"),
    ],
)
def test_no_verdict_is_one_clear_line_and_exit_2(cli, tmp_path, name, expected):
    (tmp_path / "models.py").write_text(BROKEN)
    work, temp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()
    out = _audit(f"{tmp_path / 'models.py'}:{name}", cwd=work, temp=temp)
    assert out.returncode == 2 and out.stdout == ""
    errors = [line for line in out.stderr.splitlines() if line.startswith("gradviz: error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"gradviz: error: {expected}"), out.stderr
    if name == "Broken":  # the line of the user's code that raised, and that code's own frames under it
        assert "models.py, line 9)" in errors[0]
        assert out.stderr.splitlines()[1] == "Traceback (your code only):"
    else:
        assert out.stderr.splitlines() == errors
    assert list(work.iterdir()) == [] and list(temp.iterdir()) == []  # nothing left behind
    as_json = cli("audit", f"{tmp_path / 'models.py'}:{name}", "--json")
    assert as_json.returncode == 2
    check_document("error", json.loads(as_json.stdout))


def _audit(*args: str, cwd: Path, temp: Path, **env: str) -> subprocess.CompletedProcess:
    """``gradviz audit ARGS`` with its temporary files under ``temp``."""
    return subprocess.run(
        [sys.executable, "-m", "gradviz", "audit", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp), **env},
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_max_checks_limits_the_calls_checked(cli):
    out = cli("audit", f"{MODELS}:TwoNorms", "--max-checks", "1", "--json")
    assert out.returncode == 0, out.stderr  # the wrong second call is past the limit: not checked
    *nodes, summary = [json.loads(line) for line in out.stdout.splitlines()]
    assert [d["node"]["status"] for d in nodes] == ["passed", "not checked"]
    assert summary["audit"]["checked"] == 1 and summary["audit"]["not_checked"] == ["rest → BadRMSNormFn, call 2 of 2"]
    refused = cli("audit", f"{MODELS}:TwoNorms", "--max-checks", "0")
    assert refused.returncode == 2 and "--max-checks must be at least 1" in refused.stderr
    table = cli("audit", f"{MODELS}:TwoNorms", "--max-checks", "1")
    assert "all 1 checked custom node call(s) match finite differences (1 call(s) not checked" in table.stdout


def test_inputs_file_replaces_example_inputs(cli, tmp_path):
    torch.manual_seed(5)
    x = torch.randn(1, 3, audit_models.WIDTH, dtype=torch.float64)  # three rows, not example_inputs' four
    torch.save((x,), tmp_path / "inputs.pt")
    out = cli("audit", f"{MODELS}:TwoNorms", "--inputs", str(tmp_path / "inputs.pt"), "--json")
    assert out.returncode == 1, out.stderr
    *nodes, _ = [json.loads(line) for line in out.stdout.splitlines()]
    assert [d["node"]["shapes"][0] for d in nodes] == [[1, 1, 8], [1, 3, 8]]
    torch.manual_seed(SEED)
    oracle = [c.gradcheck() for c in record_calls(audit_models.TwoNorms(), x) if c.differentiated]
    assert [d["node"]["passed"] for d in nodes] == oracle == [True, False]


WIDE = '''
import os
import pathlib

import torch
from tests.core.audit_models import LeakyCapFn


class Wide(torch.nn.Module):
    def forward(self, x):
        pathlib.Path(os.environ["AUDIT_PIDS"]).write_text(f"{os.getpid()} {os.getppid()}")
        return LeakyCapFn.apply(x)


def example_inputs(device, dtype):
    return (torch.randn(128, 1024, device=device, dtype=dtype, requires_grad=True),)  # 1 MiB in float64
'''


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_model_too_large_for_the_memory_limit_is_one_line_exit_2_and_nothing_left_behind(tmp_path):
    """The capture's copy of x (1 MiB) and one forward's output (1 MiB) cannot fit in 1 MiB, even
    with the Jacobians (128 GiB) searched rather than held: refused before any check."""
    (tmp_path / "wide.py").write_text(WIDE)
    work, temp, pids = tmp_path / "work", tmp_path / "tmp", tmp_path / "pids"
    work.mkdir()
    temp.mkdir()
    out = _audit(f"{tmp_path / 'wide.py'}:Wide", "--max-memory-mb", "1", cwd=work, temp=temp, AUDIT_PIDS=str(pids))
    assert out.returncode == 2 and out.stdout == "", out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("gradviz: error: Too large to audit: checking (model) → LeakyCapFn, call 1 of 1 needs")
    assert "at least 2.0 MiB, more than the memory limit of 1.0 MiB" in lines[0]
    assert "Traceback" not in out.stderr
    assert list(work.iterdir()) == [] and list(temp.iterdir()) == []
    run, worker = (int(p) for p in pids.read_text().split())  # the forward ran in the worker's run process
    assert run != worker and _gone(run) and _gone(worker)


def test_a_node_too_large_for_its_jacobians_gets_gradchecks_verdict_by_projections():
    """Under --max-memory-mb 0.01 neither node's Jacobians (MiBs with the chunk buffers) may be held;
    the captured copies and outputs (about 1 KiB) fit: each verdict is gradcheck's all the same."""
    out = gradviz("audit", f"{MODELS}:TwoNorms", "--max-memory-mb", "0.01", "--json")
    assert out.returncode == 1, out.stderr
    *nodes, _ = [json.loads(line) for line in out.stdout.splitlines()]
    assert all(d["report"]["paths"]["analytic"] == "projections" and d["report"]["large_blocks"] for d in nodes)
    torch.manual_seed(SEED)
    model = audit_models.TwoNorms()
    (x,) = audit_models.example_inputs("cpu", torch.float64)
    oracle = [c.gradcheck() for c in record_calls(model, x) if c.differentiated]
    assert [d["node"]["passed"] for d in nodes] == oracle == [True, False]
