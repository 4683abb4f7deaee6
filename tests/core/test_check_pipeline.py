"""The check's verdict is complete before its explanation starts: an explain step that raises loses
its own words only, never the verdict, which stays gradcheck's."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gradviz.core import check_explain
from gradviz.core.check import check_function
from gradviz.schema.errors import Cancelled
from gradviz.schema.settings import CheckSettings
from tests.core.why_functions import Abs, Tanh, TanhOneMinusY, abs_inputs, random_inputs
from tests.real_world.oracle import gradcheck_passes


def gradcheck(fn, inputs) -> bool:
    return gradcheck_passes(fn.apply, tuple(inputs.args), copies=True)


def broken(*args, **kwargs):
    raise RuntimeError("the hint rule broke")


def missing(what: str) -> str:
    return check_explain.EXPLANATION_MISSING.format(what=what, error="RuntimeError: the hint rule broke")


@pytest.mark.parametrize("fn", [Tanh, TanhOneMinusY], ids=lambda f: f.__name__)
def test_a_hint_rule_that_raises_leaves_the_verdict_and_says_so(monkeypatch, fn):
    inputs = random_inputs((3, 4))
    expected = check_function(fn, inputs)
    monkeypatch.setattr(check_explain, "diagnose", broken)
    result = check_function(fn, inputs)
    assert result.passed is expected.passed is gradcheck(fn, inputs)
    assert [c.to_dict() for c in result.checks] == [c.to_dict() for c in expected.checks]
    assert [b.n_failing for b in result.blocks] == [b.n_failing for b in expected.blocks]
    assert missing(check_explain.HINTS) in result.warnings
    assert all(not b.hints for b in result.blocks)  # none half-said
    if not expected.passed:
        assert any(b.hints for b in expected.blocks)  # there were hints to lose


def test_a_diagnosis_that_raises_takes_back_what_it_added(monkeypatch):
    """float32 and wrong: the diagnosis marks kinks, re-checks in float64 and warns, then raises;
    the result is the one without a diagnosis, plus the warning that says it is missing."""
    inputs = random_inputs((3, 4), dtype=torch.float32)
    unexplained = check_function(TanhOneMinusY, inputs, CheckSettings(explain=False))
    explained = check_function(TanhOneMinusY, inputs)
    assert explained.precision is not None  # the diagnosis adds to the result here

    real = check_explain.explain_failures

    def half_done(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("the hint rule broke")

    monkeypatch.setattr(check_explain, "explain_failures", half_done)
    result = check_function(TanhOneMinusY, inputs)
    assert result.passed is explained.passed is unexplained.passed is False
    assert result.precision is None and all(b.kinks is None for b in result.blocks)
    assert [b.hints for b in result.blocks] == [b.hints for b in unexplained.blocks]
    assert result.warnings == [*unexplained.warnings, missing(check_explain.DIAGNOSIS)]


def test_cancelling_during_the_explanation_still_cancels(monkeypatch):
    def cancelled(*args, **kwargs):
        raise Cancelled()

    monkeypatch.setattr(check_explain, "explain_failures", cancelled)
    with pytest.raises(Cancelled):
        check_function(Abs, abs_inputs())


@pytest.mark.parametrize("explain", [True, False])
def test_the_verdict_is_the_same_with_or_without_the_explanation(explain):
    inputs = abs_inputs()  # fails at the kink x = 0: the diagnosis probes and re-checks
    settings = dataclasses.replace(CheckSettings(), explain=explain)
    result = check_function(Abs, inputs, settings)
    assert result.passed is False is gradcheck(Abs, inputs)
    assert (result.blocks[0].kinks is not None) is explain
