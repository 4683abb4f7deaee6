"""gradviz.check's verdict is torch.autograd.gradcheck's on every Function of the real-world corpus.

PyTorch's side is ``tests/real_world/oracle.py`` (torch only). Each Function is checked as a
class and wrapped in a plain callable (so the callable path runs gradcheck's default checks
too); the caller's tensors and every random generator are as they were afterwards.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import numpy as np
import pytest
import torch

import gradviz
from gradviz.schema.errors import GradvizError
from tests.real_world import oracle

CORPUS = oracle.corpus_files()
TOL = oracle.Tolerances()


@functools.cache
def corpus_entry(path: Path):
    module = oracle.load_module(path)
    fn = oracle.chosen_function(module)
    return module, fn, oracle.gradcheck_verdict(fn, oracle.example_args(module), TOL)


def gradviz_passes(fn, args) -> bool:
    """gradviz.check's verdict; raising (the Function's code failed, nothing to check) is failing,
    as gradcheck raising is."""
    try:
        return gradviz.check(
            fn, args, eps=TOL.eps, atol=TOL.atol, rtol=TOL.rtol, raise_exception=False
        ).passed
    except (GradvizError, ValueError, RuntimeError):
        return False


def snapshot(args: tuple) -> list:
    return [(a.detach().clone(), a.requires_grad, a.grad) if isinstance(a, torch.Tensor) else a for a in args]


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    a, b = (t.to_dense() if t.layout != torch.strided else t for t in (a.detach(), b))
    return a.dtype == b.dtype and a.stride() == b.stride() and torch.equal(a.nan_to_num(), b.nan_to_num())


def rng_states():
    return torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()


@pytest.mark.parametrize("form", ["class", "callable"])
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_verdict_is_gradchecks(path, form):
    module, fn, expected = corpus_entry(path)
    args = oracle.example_args(module)
    target = fn if form == "class" else (lambda *a: fn.apply(*a))
    before, rng = snapshot(args), rng_states()
    got = gradviz_passes(target, args)
    assert got == expected.passed, (
        f"gradviz.check ({form}) {'PASS' if got else 'FAIL'}, gradcheck {'PASS' if expected.passed else 'FAIL'} "
        f"({expected.reason or 'passed'})"
    )
    for old, new in zip(before, args):
        if isinstance(new, torch.Tensor):
            value, requires_grad, grad = old
            assert same_values(new, value)
            assert new.requires_grad == requires_grad and new.grad is grad is None
    after = rng_states()
    assert torch.equal(rng[0], after[0]) and rng[1] == after[1] and np.array_equal(rng[2], after[2])


def test_the_corpus_has_both_verdicts():
    verdicts = [corpus_entry(p)[2].passed for p in CORPUS]
    assert len(CORPUS) >= 36 and any(verdicts) and not all(verdicts)
