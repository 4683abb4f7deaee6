"""Hints name the classic mistake of each buggy twin and of each rule's own example, and stay
quiet on passing blocks. Every hint is computed from the two Jacobians: the tests below check
the words, the Functions carry their slips only in their backward."""

from __future__ import annotations

import pytest
import torch

from gradviz.core.check import check_function, check_source
from gradviz.core.loader import load_file, load_source
from gradviz.schema.library import builtin_functions, find_builtin
from tests.core.why_functions import (
    CubeNoGradOutput,
    MatMulGradTransposed,
    MulSwapped,
    ScaleTransposedReshape,
    SoftmaxDiagonal,
    Tanh,
    TanhOneMinusY,
    random_inputs,
)
from tests.sources import SQUARE

TWIN_WORDS = {
    "buggy_square_factor": "0.5 × numerical",
    "buggy_abs_product_sign": "analytic = -numerical",
    "buggy_kill_head_leak": "entries the forward ignores",
    "buggy_linear_bias_axis": "must sum over dim 0, not dim 1",
    "buggy_linear_transpose": "output axis 1 and input axis 1 swapped",
    "buggy_silu_term": "a term is missing",
}


def hints_of(result) -> list[str]:
    return [h for b in result.blocks for h in b.hints]


def test_every_buggy_twin_has_a_rule():
    twins = {e.name for e in builtin_functions() if e.bug}
    assert twins == set(TWIN_WORDS), "a new buggy twin needs its hint here"


@pytest.mark.parametrize("name, words", sorted(TWIN_WORDS.items()))
def test_buggy_twin_hint(name, words):
    result = check_source(load_file(find_builtin(name)))
    hints = hints_of(result)
    assert any(words in h for h in hints), hints
    assert all(not b.hints for b in result.blocks if b.passed)


@pytest.mark.parametrize(
    "fn, shapes, fixed, words",
    [
        (TanhOneMinusY, [(3, 4)], (), "factor that changes from cell to cell"),
        (SoftmaxDiagonal, [(3, 4)], (), "cross terms"),
        (CubeNoGradOutput, [(2, 3)], (), "ignores grad_output"),
        (MulSwapped, [(2, 3), (2, 3)], (), "wrong order"),
        (ScaleTransposedReshape, [(2, 3), (2, 3)], (1,), "transposed and reshaped back"),
        (MatMulGradTransposed, [(3, 3), (3, 4)], (), "axes 0 and 1 swapped"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
def test_rule(fn, shapes, fixed, words):
    result = check_function(fn, random_inputs(*shapes, fixed=fixed))
    assert not result.passed
    hints = hints_of(result)
    assert any(words in h for h in hints), hints


def test_flipped_sign_and_missing_gradient():
    flipped = check_source(load_source(SQUARE.replace("return 2 * x * g", "return -2 * x * g")))
    assert "sign is flipped" in flipped.blocks[0].hints[0]
    missing = check_source(load_source(SQUARE.replace("return 2 * x * g", "return None")))
    assert "no gradient for x" in missing.blocks[0].hints[0]


def test_grad_output_used_transposed():
    source = SQUARE.replace("return 2 * x * g", "return 2 * x * g.t()").replace("randn(3,", "randn(3, 3,")
    result = check_source(load_source(source))
    assert any("grad_output is used transposed" in h for h in hints_of(result)), hints_of(result)


def test_no_hints_on_passing_blocks():
    for entry in builtin_functions():
        if entry.bug is None:
            result = check_source(load_file(entry.path))
            assert all(not b.hints for b in result.blocks), entry.name


def test_the_fixed_tanh_passes_with_no_hint():
    """The rule needs the slip: the same inputs through the right backward give gradcheck's pass and no hint."""
    x = random_inputs((3, 4))
    fixed = check_function(Tanh, x)
    assert fixed.passed and not hints_of(fixed)
    assert torch.autograd.gradcheck(Tanh.apply, (x.args[0],), raise_exception=False)
