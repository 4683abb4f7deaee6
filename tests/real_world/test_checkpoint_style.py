"""Issue 23 item 5: a Function that also reads its argument another way (checkpoint style).

The Functions in ``checkpoint/checkpoint_style.py`` get the module's parameters as arguments but
read them through the module. gradcheck perturbs the caller's own tensors in place, so the
module sees every perturbation; gradviz must too, through the API and through the CLI's worker,
and give gradcheck's verdict (computed here, never typed). The caller's tensors come back
bitwise unchanged, with no ``.grad`` and the global RNG untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import gradviz

from . import oracle

FILE = Path(__file__).parent / "checkpoint" / "checkpoint_style.py"
NAMES = ["Checkpoint", "CheckpointWrongWeight"]
ZERO_BLOCK = "both Jacobians are all zero"


def _gradcheck(fn, args) -> bool:
    """PyTorch's verdict on the caller's own tensors, exactly as a user calls it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return torch.autograd.gradcheck(fn.apply, args, raise_exception=False)
        except Exception:  # gradcheck raising (not returning False) is a failure too
            return False


def _args(module):
    return module.example_inputs(torch.device("cpu"), torch.float64)


@pytest.fixture(scope="module")
def corpus():
    return oracle.load_module(FILE)


@pytest.mark.parametrize("name", NAMES)
def test_api_verdict_is_gradchecks(corpus, name):
    fn = getattr(corpus, name)
    expected = _gradcheck(fn, _args(corpus))
    assert expected == (name == "Checkpoint")  # the corpus itself is sound
    args = _args(corpus)
    before = [a.detach().clone() if isinstance(a, torch.Tensor) else None for a in args]
    rng = torch.get_rng_state()
    report = gradviz.check(fn, args, raise_exception=False)
    assert report.passed == expected, report
    weight = next(b for b in report.result.blocks if b.input == 2)
    assert abs(weight.numerical).max() > 0, "the weight's numerical Jacobian must see the module's own weight move"
    for a, b in zip(args, before):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a.detach(), b) and a.grad is None
            assert a.detach().view(-1).view(torch.int64).equal(b.view(-1).view(torch.int64))  # bitwise
    assert torch.equal(torch.get_rng_state(), rng)
    assert not any(ZERO_BLOCK in w for w in report.result.warnings)


@pytest.mark.parametrize("name", NAMES)
def test_cli_verdict_is_gradchecks(corpus, name, tmp_path):
    expected = _gradcheck(getattr(corpus, name), _args(corpus))
    run = _cli(f"{FILE}:{name}", "--json", cwd=tmp_path)
    payload = json.loads(run.stdout)
    assert run.returncode == (0 if expected else 1), run.stderr
    assert payload["passed"] == expected, run.stdout[-2000:]
    assert not [w for w in payload["warnings"] if ZERO_BLOCK in w], payload["warnings"]


UNUSED = Path(__file__).parent / "checkpoint" / "unused_weight.py"


def _cli(target: str, *extra: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(gradviz.__file__).parent.parent)}
    return subprocess.run(
        [sys.executable, "-m", "gradviz", "check", target, *extra],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )


def test_all_zero_block_is_never_a_bare_pass():
    module = oracle.load_module(UNUSED)
    args = _args(module)
    expected = _gradcheck(module.UnusedWeight, args)
    report = gradviz.check(module.UnusedWeight, args, raise_exception=False)
    assert report.passed == expected
    found = [m for m in report.result.warnings if ZERO_BLOCK in m]
    assert len(found) == 1 and found[0].startswith("out0 / w:"), report.result.warnings
    assert ZERO_BLOCK in str(report)


def test_all_zero_block_is_named_by_the_cli(tmp_path):
    expected = _gradcheck(oracle.load_module(UNUSED).UnusedWeight, _args(oracle.load_module(UNUSED)))
    as_json = _cli(f"{UNUSED}:UnusedWeight", "--json", cwd=tmp_path)
    payload = json.loads(as_json.stdout)
    assert payload["passed"] == expected
    assert [w for w in payload["warnings"] if ZERO_BLOCK in w and w.startswith("out0 / w:")], payload["warnings"]
    table = _cli(f"{UNUSED}:UnusedWeight", cwd=tmp_path)
    assert table.returncode == (0 if expected else 1), table.stderr
    assert ZERO_BLOCK in " ".join(table.stdout.split()), table.stdout
