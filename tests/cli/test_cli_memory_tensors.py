"""``gradviz memory`` lists what each variant saves, text and JSON (the study itself runs in the
worker; the CLI runs in this process, the ``cli`` fixture)."""

from __future__ import annotations

import json

import pytest

from gradviz.core.memory import conv_bn_study
from gradviz.schema.memory import TENSOR_COLUMNS, SavedTensor, VariantMemory, tensor_rows
from gradviz.schema.units import format_bytes

ARGS = ("memory", "--layers", "2", "--shape", "2,3,12,12", "--out-channels", "4")


@pytest.fixture(scope="module")
def study() -> dict:
    """The same study in this process: the core, tested against PyTorch's hooks in tests/core."""
    return conv_bn_study(2, (2, 3, 12, 12), 4).to_dict()


def test_json_lists_every_saved_tensor_with_the_node_that_saved_it(cli, study):
    out = cli(*ARGS, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for name in ("unfused", "fused"):
        variant = data["variants"][name]
        tensors = [SavedTensor.from_dict(t) for t in variant["tensors"]]
        assert variant["tensors"] == study["variants"][name]["tensors"]
        assert all(t.name and t.op and t.attribute for t in tensors)
        assert sum(t.bytes for t in tensors if not t.shared) == variant["saved_bytes"]
        assert len({t.storage for t in tensors}) == variant["count"]
    fused = data["variants"]["fused"]
    assert sum(t["bytes"] for t in fused["ctx_tensors"]) == fused["ctx_attribute_bytes"]
    assert {t["attribute"] for t in fused["ctx_tensors"]} == {"ctx.sum", "ctx.sqrt_var"}


def test_text_has_one_row_per_saved_tensor_of_each_variant(cli, study):
    out = cli(*ARGS)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for name in ("unfused", "fused"):
        start = lines.index(f"  {name}: what it saves for backward")
        assert lines[start + 1].split() == " ".join(TENSOR_COLUMNS).split()
        rows = tensor_rows(VariantMemory.from_dict(study["variants"][name]))
        shown = lines[start + 2 : start + 2 + len(rows)]
        for row, text in zip(rows, shown, strict=True):
            for cell in row:
                assert cell in text, (cell, text)
    assert format_bytes(study["variants"]["unfused"]["tensors"][2]["bytes"]) in out.stdout
    assert "output of convolution #1" in out.stdout and "NativeBatchNormBackward0 #1 · input" in out.stdout
