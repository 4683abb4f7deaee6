"""``gradviz check package.module:Name --inputs FILE`` and ``gradviz FILE.py``, through the real CLI.

Every command of this module starts at once, then each test reads its own outcome. Each command
that reaches the worker pays for a torch import, so refusals made inside the worker are fed to
one shared worker (the same handlers, the same messages) and a few go through the whole CLI;
every refusal is fed its real bad input and is one line on stderr with exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from tests.paths import ROOT

OPS = """
import torch

class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x

class HalfCube(Cube):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 1.5 * x * x

def doubled(x):
    return Cube.apply(x) * 2

LIMIT = 3
"""


class Unsafe:
    pass


COMMANDS = {
    "pass": ["check", "shop.ops:Cube", "--inputs", "batch.pt", "--save", "saved"],
    "fail": ["check", "shop/ops.py:HalfCube", "--inputs", "batch.pt"],
    "no module": ["check", "shop.opz:Cube"],
    # refused before any worker starts
    "missing inputs": ["check", "shop.ops:Cube", "--inputs", "nowhere.pt"],
    "two names": ["check", "shop.ops:Cube", "--function", "HalfCube"],
    "open file": ["shop/ops.py"],
    "open session": ["saved.gradviz"],
    "open missing": ["missing.py"],
}
# sent to one worker, as the CLI sends them (gradviz.cli.code_request builds the request)
REQUESTS = {
    "callable": ("check", "shop.ops:doubled", "batch.pt"),
    "graph": ("graph", "shop.ops:Cube", "batch.pt"),
    "no name": ("check", "shop.ops:Cub", None),
    "not a Function": ("check", "shop.ops:LIMIT", None),
    "garbage inputs": ("check", "shop.ops:Cube", "garbage.pt"),
    "unsafe inputs": ("check", "shop.ops:Cube", "unsafe.pt"),
    "dict inputs": ("check", "shop.ops:Cube", "dict.pt"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Make the project (package shop, inputs files), start every command at once, collect them."""
    root = tmp_path_factory.mktemp("project")
    (root / "shop").mkdir()
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "ops.py").write_text(textwrap.dedent(OPS))
    (root / "saved.gradviz").write_text("{}")
    x = torch.linspace(-1.5, 2.0, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()
    torch.save((x,), root / "batch.pt")
    (root / "garbage.pt").write_bytes(b"\x00not a torch file at all")
    torch.save((x, Unsafe()), root / "unsafe.pt")
    torch.save({"x": x}, root / "dict.pt")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env.pop("QT_QPA_PLATFORM", None)
    started = {
        name: subprocess.Popen(
            [sys.executable, "-m", "gradviz", *args],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in COMMANDS.items()
    }
    replies = worker_replies(root)
    done = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=300)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return root, x, {**done, **replies}


def worker_replies(root) -> dict:
    from gradviz.cli.request import code_request
    from gradviz.schema.requests import CheckRequest, GraphRequest
    from gradviz.worker.client import WorkerClient

    def request(op: str, target: str, inputs: str | None):
        code = code_request(target, None, inputs)
        return GraphRequest(code) if op == "graph" else CheckRequest(code, report=True, graph=False)

    cwd = os.getcwd()
    os.chdir(root)  # the worker starts here, as it starts in the CLI's folder
    try:
        with WorkerClient(output=None) as worker:
            return {name: worker.request(request(*spec)) for name, spec in REQUESTS.items()}
    finally:
        os.chdir(cwd)


def test_a_module_target_with_an_inputs_file_passes(runs):
    _, _, done = runs
    out = done["pass"]
    assert out.returncode == 0, out.stderr
    assert "Cube on cpu, float64" in out.stdout and "out0 / x" in out.stdout and "2x3" not in out.stdout


def test_the_api_reports_the_same_arrays_as_check_save(runs, monkeypatch):
    """gradviz.check in this process on the same Function and inputs: the very arrays the CLI saved."""
    import gradviz

    root, x, done = runs
    assert done["pass"].returncode == 0, done["pass"].stderr
    monkeypatch.syspath_prepend(str(root))
    from shop.ops import Cube

    try:
        report = gradviz.check(Cube, torch.load(root / "batch.pt", weights_only=True))
        for kind in ("analytic", "numerical"):
            saved = np.load(root / "saved" / f"{kind}_o0_i0.npy", allow_pickle=False)
            np.testing.assert_array_equal(getattr(report, kind)[0, 0], saved)
        assert report.block(0, 0).shape == (6, 6) and x.shape == (2, 3)
    finally:
        for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
            del sys.modules[name]


def test_a_failing_file_target_exits_one_with_the_hint(runs):
    out = runs[2]["fail"]
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith("HalfCube on cpu") and "out0[" in out.stdout and "factor" in out.stdout


def test_a_callable_target_runs_gradchecks_checks(runs):
    reply = runs[2]["callable"]
    assert reply.ok, reply.error
    report = reply.result["report"]
    assert report["function"] == "doubled" and report["passed"]
    assert [c["name"] for c in report["checks"]] == [
        "reentrant",
        "multiplied_by_grad_output",
        "undefined_output_grads",
    ]


def test_graph_takes_targets_too(runs):
    reply = runs[2]["graph"]
    assert reply.ok, reply.error
    assert "custom Function Cube" in reply.result["table"]


def test_a_module_target_request_names_the_modules_file(runs):
    """So a run of it that hangs or crashes is reported at the module's line."""
    from gradviz.cli.request import code_request

    root = runs[0]
    request = code_request("shop.ops:Cube", None, None)
    assert request.target == "shop.ops:Cube" and request.function == "Cube"
    assert request.filename is None  # not found from this folder: nothing to quote, nothing wrong
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert code_request("shop.ops:Cube", None, None).filename == str(
            (root / "shop" / "ops.py").resolve()
        )
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no module", "No module named 'shop.opz'"),
        ("missing inputs", "nowhere.pt as inputs: No such file or directory"),
        ("two names", "Two names for the Function: Cube (in the target) and --function HalfCube"),
        ("open missing", "cannot open missing.py: no such file"),
    ],
)
def test_each_refusal_is_one_line_and_exit_two(runs, case, message):
    out = runs[2][case]
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


@pytest.mark.parametrize(
    ("case", "kind", "message"),
    [
        ("no name", "unknown_function", "has no attribute 'Cub' (Functions there: Cube, HalfCube)"),
        ("not a Function", "no_function", "shop.ops:LIMIT is an int, not a torch.autograd.Function subclass"),
        ("garbage inputs", "example_inputs", "garbage.pt as inputs: it is not a file written by torch.save"),
        (
            "unsafe inputs",
            "example_inputs",
            "holds a tests.cli.test_targets.Unsafe, which loading with weights_only",
        ),
        ("dict inputs", "example_inputs", "holds a dict, not a tensor or a tuple of arguments"),
    ],
)
def test_each_refusal_in_the_worker_is_one_sentence(runs, case, kind, message):
    """What the CLI prints after "gradviz: error: " (and exits 2 on, as for "no module" above)."""
    reply = runs[2][case]
    assert not reply.ok and reply.kind == kind
    assert message in reply.error["message"] and "\n" not in reply.error["message"]
    assert "filename" not in reply.error  # no traceback of gradviz's or the user's to show


@pytest.mark.parametrize("case", ["open file", "open session"])
def test_gradviz_file_opens_the_window_not_invalid_choice(runs, case):
    out = runs[2][case]
    assert out.returncode == 2 and "invalid choice" not in out.stderr
    assert "no display found" in out.stderr  # the window's own refusal: it was asked to open the file
