"""Hints name the classic mistake of each buggy twin, and stay quiet on passing blocks."""

from __future__ import annotations

import pytest

from gradviz.core.check import check_source
from gradviz.core.loader import load_file, load_source
from gradviz.schema.library import builtin_functions, find_builtin
from tests.sources import SQUARE


@pytest.mark.parametrize(
    "name, words",
    [
        ("buggy_square_factor", "0.5 × numerical"),
        ("buggy_abs_product_sign", "analytic = -numerical"),
        ("buggy_kill_head_leak", "entries the forward ignores"),
    ],
)
def test_buggy_twin_hint(name, words):
    result = check_source(load_file(find_builtin(name)))
    hints = [h for b in result.blocks for h in b.hints]
    assert any(words in h for h in hints), hints


def test_flipped_sign_and_missing_gradient():
    flipped = check_source(load_source(SQUARE.replace("return 2 * x * g", "return -2 * x * g")))
    assert "sign is flipped" in flipped.blocks[0].hints[0]
    missing = check_source(load_source(SQUARE.replace("return 2 * x * g", "return None")))
    assert "no gradient for x" in missing.blocks[0].hints[0]


def test_no_hints_on_passing_blocks():
    for entry in builtin_functions():
        if entry.bug is None:
            result = check_source(load_file(entry.path))
            assert all(not b.hints for b in result.blocks), entry.name
