"""Bad settings, bad files and inputs gradviz cannot check: exit 2 with one clear sentence.

Each test feeds the bad thing for real through the command line (a real FIFO, a real symlink
loop, a real closed stdout) and checks the message and the exit code. None may end in a Python
traceback, "Internal error", or exit 0/1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli.refusal_sources import fn_source
from tests.cli.runner import gradviz
from tests.paths import ROOT
from tests.sources import HEADER, SQUARE


def refused(out: subprocess.CompletedProcess, fragment: str) -> str:
    """Assert a clean refusal mentioning ``fragment``; return the error line."""
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback (most recent call last)" not in out.stderr
    assert "Internal error" not in out.stderr
    first = out.stderr.splitlines()[0]
    assert first.startswith("gradviz: error: ") and fragment in first, out.stderr
    return first


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--eps", "inf"], "eps must be a finite number"),
        (["--eps", "nan"], "eps must be a finite number"),
        (["--eps=-1e-6"], "eps must be positive"),
        (["--eps", "0"], "eps must be positive"),
        (["--atol", "inf"], "atol must be a finite number"),
        (["--atol=-1"], "atol must be >= 0"),
        (["--rtol", "nan"], "rtol must be a finite number"),
        (["--rtol=-0.1"], "rtol must be >= 0"),
        (["--nondet-tol=-1"], "nondet_tol must be >= 0"),
        (["--timeout", "inf"], "timeout must be a finite number"),
        (["--timeout", "nan"], "timeout must be a finite number"),
        (["--timeout", "0"], "timeout must be positive"),
        (["--max-memory-mb", "inf"], "memory limit (MB) must be a finite number"),
        (["--max-memory-mb=-3"], "memory limit (MB) must be positive"),
        (["--max-memory-mb", "1e-12"], "memory limit (MB) is too small"),
        (["--max-memory-mb", "1e300"], "memory limit (MB) is too large"),
        (["--seed", str(2**64)], "out of range"),
        ([f"--seed={-(2**63) - 1}"], "out of range"),
    ],
)
def test_bad_settings_exit_two_before_any_user_code_runs(write_source, flags, fragment):
    marker = write_source("", "ran.txt")
    source = SQUARE + f"\nopen({str(marker)!r}, 'w').write('ran')\n"
    out = gradviz("check", str(write_source(source)), *flags, "--json")
    refused(out, fragment)
    assert json.loads(out.stdout)["error"]["kind"] == "settings"
    assert marker.read_text() == ""  # refused before the worker imported the file


@pytest.mark.parametrize("seed", [str(2**64 - 1), str(-(2**63))])
def test_seeds_at_the_edges_of_torchs_range_are_accepted(cli, write_source, seed):
    assert cli("check", str(write_source(SQUARE)), f"--seed={seed}").returncode == 0


def test_directory_fifo_device_and_symlink_loop_are_refused_before_reading(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    loop_a, loop_b = tmp_path / "a.py", tmp_path / "b.py"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    cases = {
        tmp_path: "it is a directory",
        fifo: "it is a FIFO",
        "/dev/zero": "it is a device or socket",
        loop_a: "a symbolic link loop",
        tmp_path / "missing.py": "no such file",
    }
    for path, fragment in cases.items():
        out = gradviz("check", str(path), "--timeout", "5")
        refused(out, fragment)


def test_a_source_larger_than_ten_mib_is_refused_with_its_size(tmp_path):
    path = tmp_path / "huge.py"
    path.write_bytes(b"#" * (10 * 2**20 + 1) + b"\n")
    refused(gradviz("check", str(path)), "it is 10.0 MiB, more than the 10.0 MiB")


def test_closed_stdout_exits_two(write_source):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", str(write_source(SQUARE))],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
        close_fds=True,
        pass_fds=(),
        preexec_fn=lambda: os.close(1),
    )
    assert out.returncode == 2
    assert "Standard output is closed" in out.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("as_json", [False, True])
def test_full_stdout_exits_two(write_source, as_json):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "gradviz", "check", str(write_source(SQUARE)), *(["--json"] if as_json else [])],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    assert out.returncode == 2, out.stderr
    assert "Cannot write the result to standard output: No space left on device" in out.stderr
    assert "Traceback" not in out.stderr


NESTED_BRACKETS = "x = " + "[" * 3000 + "]" * 3000 + "\n"
NESTED_UNARY = "x = " + "-" * 200_000 + "1\n"
NESTED_SUM = "x = " + "+".join(["1"] * 300_000) + "\n"


@pytest.mark.parametrize(
    ("tail", "fragment"),
    [
        (NESTED_BRACKETS, "too many nested parentheses"),
        (NESTED_UNARY, "nested too deeply"),
        (NESTED_SUM, "nested too deeply"),
        ("y = 1\x00\n", "null bytes"),
    ],
    ids=["brackets", "unary", "sum", "nul"],
)
def test_source_the_compiler_cannot_take_is_a_syntax_error(cli, write_source, tail, fragment):
    out = cli("check", str(write_source(SQUARE + tail)), "--json")
    line = refused(out, fragment)
    assert len(line) < 400  # a 6000-character line is not quoted whole
    assert json.loads(out.stdout)["error"]["kind"] == "syntax"


def test_zero_element_input_is_nothing_to_check(cli, write_source):
    source = fn_source("return x * 2", "return g * 2", "torch.randn(0, 3, device=device, dtype=dtype, requires_grad=True)")
    out = cli("check", str(write_source(source)), "--json")
    refused(out, "Nothing to check")
    assert json.loads(out.stdout)["error"]["kind"] == "nothing_to_check"


def test_one_empty_input_beside_a_real_one_is_a_warning(cli, write_source):
    source = HEADER + """
class Mul(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y.sum()

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y.sum(), (g * x).sum().expand_as(y)


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),
            torch.randn(0, device=device, dtype=dtype, requires_grad=True))
"""
    out = gradviz("check", str(write_source(source)), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["passed"] and any("Nothing to check in out0 / y" in w for w in report["warnings"])


@pytest.mark.parametrize(
    ("forward", "backward", "inputs", "fragment"),
    [
        ("return (x * 2).to_sparse()", "return g.to_dense() * 2", "torch.randn(3, 3, device=device, dtype=dtype, requires_grad=True)", "sparse_coo tensor as output 0"),
        ("return x * 2", "return g * 2", "torch.randn(3, device='meta', dtype=dtype, requires_grad=True)", "is a meta tensor"),
        ("return x * 2", "return g * 2", "torch.randn(3, 3, device=device, dtype=dtype).to_sparse().requires_grad_()", "sparse_coo tensor that requires grad"),
    ],
    ids=["sparse_output", "meta_input", "sparse_differentiable_input"],
)
def test_tensors_gradviz_cannot_compare_are_refused_clearly(cli, write_source, forward, backward, inputs, fragment):
    out = cli("check", str(write_source(fn_source(forward, backward, inputs))), "--json")
    refused(out, fragment)


@pytest.mark.parametrize(
    "inputs",
    [
        "torch.randn(3, device=device, dtype=dtype).expand(4, 3).requires_grad_()",
        "torch.randn(5, device=device, dtype=dtype).as_strided((3, 3), (1, 1)).requires_grad_()",
    ],
    ids=["expanded", "overlapping_as_strided"],
)
def test_differentiable_inputs_whose_elements_share_memory_are_refused(cli, write_source, inputs):
    """Moving one element would move several; gradcheck refuses (or gets) them wrong too."""
    out = cli("check", str(write_source(fn_source("return x * 2", "return g * 2", inputs))), "--json")
    refused(out, "has elements that share memory")
