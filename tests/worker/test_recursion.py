"""Endless recursion under a raised recursion limit, for real, through the CLI.

Pure Python recursion reaches a million frames and raises RecursionError: the error names the
user's line with the stack trimmed, in a few kilobytes (the whole traceback is one 67 MB line,
more than the worker accepts). Recursion through C code overflows the C stack instead: a segfault, reported as a
crash at the user's line that says it looks like endless recursion.
"""

from __future__ import annotations

import json

import pytest

RECURSES = '''
import sys
import torch
from torch.autograd import Function
sys.setrecursionlimit(10**6)

def deep(n):
    return {call}

class Deep(Function):
    @staticmethod
    def forward(ctx, x):
        deep(0)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return 2 * g

def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
'''


def check_json(cli, path) -> tuple[int, dict, str]:
    out = cli("check", str(path), "--json")
    return out.returncode, json.loads(out.stdout), out.stderr


def test_python_recursion_is_a_recursion_error_at_the_users_line(cli, write_source):
    path = write_source(RECURSES.format(call="deep(n + 1)"))
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "return deep" in text)
    code, report, stderr = check_json(cli, path)
    error = report["error"]
    assert code == 2 and error["kind"] == "forward", stderr
    assert "raised RecursionError: maximum recursion depth exceeded" in error["message"]
    assert "more times: endless recursion?" in error["message"]
    assert error["lineno"] == line
    assert [f["name"] for f in error["traceback"][:2]] == ["forward", "deep"]  # where it started, then the loop
    assert len(error["traceback"]) <= 40 and len(json.dumps(report)) < 20_000


def test_recursion_through_c_code_is_a_crash_at_the_users_line(cli, write_source):
    """map() is C: each level costs C stack, which runs out long before a million frames."""
    path = write_source(RECURSES.format(call="list(map(deep, [n + 1]))"))
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "return list(map" in text)
    code, report, stderr = check_json(cli, path)
    error = report["error"]
    assert code == 2 and error["kind"] == "crashed", stderr
    assert "SIGSEGV" in error["message"] and "endless recursion?" in error["message"]
    assert error["lineno"] == line and len(error["traceback"]) <= 40


@pytest.mark.parametrize("size", [10**7])
def test_a_huge_exception_message_is_cut_at_the_source(cli, write_source, size):
    source = RECURSES.format(call="deep(n)").replace("deep(0)", f"raise ValueError('x' * {size})")
    code, report, stderr = check_json(cli, write_source(source))
    error = report["error"]
    assert code == 2 and error["kind"] == "forward", stderr
    assert f"({size + len('ValueError: '):,} characters in all)" in error["message"]
    assert len(error["message"]) < 5000
