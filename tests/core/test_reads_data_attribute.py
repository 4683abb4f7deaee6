"""Which Functions must skip legacy vmap because their code may read ``.data`` (a batched
tensor's ``.data`` kills the process): the answer for every kind of source, read once per class."""

from __future__ import annotations

import importlib.util
import sys

import torch

from gradviz.core import function_info
from gradviz.core.function_info import reads_data_attribute

READS = """
import torch

class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return 2 * g{suffix}
"""


def load_module(monkeypatch, tmp_path, name: str, suffix: str):
    """A module imported from a file, as a user's package is (in ``sys.modules`` for this test)."""
    path = tmp_path / f"{name}.py"
    path.write_text(READS.format(suffix=suffix), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module, path


def test_the_module_of_the_class_is_read(monkeypatch, tmp_path):
    reads, _ = load_module(monkeypatch, tmp_path, "gv_reads_data", ".data")
    plain, _ = load_module(monkeypatch, tmp_path, "gv_plain", ".clone()")
    assert reads_data_attribute(reads.F) is True
    assert reads_data_attribute(plain.F) is False
    assert reads_data_attribute(plain.F, source="y = x.data") is True  # the user's file counts too
    assert reads_data_attribute(plain.F, source="y = x.data_ptr()") is False  # a call, not .data


def test_unknown_code_is_maybe_and_plain_calls_are_safe():
    assert reads_data_attribute(lambda x: x) is True  # a callable: its Functions cannot be found
    assert reads_data_attribute(lambda x: x, source="y = x * 2") is False
    unreadable = type("Unreadable", (torch.autograd.Function,), {"__module__": "not_a_module_anywhere"})
    assert reads_data_attribute(unreadable) is True
    assert reads_data_attribute(unreadable, source="y = x * 2") is False


def test_each_class_is_read_once_and_a_class_loaded_again_is_read_again(tmp_path, monkeypatch):
    first, path = load_module(monkeypatch, tmp_path, "gv_edited", ".clone()")
    reads = []
    real_getsource = function_info.inspect.getsource
    monkeypatch.setattr(function_info.inspect, "getsource", lambda obj: reads.append(obj) or real_getsource(obj))
    assert [reads_data_attribute(first.F) for _ in range(3)] == [False] * 3
    assert len(reads) == 1
    path.write_text(READS.format(suffix=".data"), encoding="utf-8")  # edited, then loaded again
    second, _ = load_module(monkeypatch, tmp_path, "gv_edited", ".data")
    assert reads_data_attribute(second.F) is True and len(reads) == 2
