"""A Function that also reads its argument another way (checkpoint style).

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
    # gradcheck raising (not returning False) is a failure too
    return oracle.gradcheck_passes(fn.apply, args, quiet=True, failing_on=(Exception,))


def _args(module, device: str = "cpu"):
    return module.example_inputs(torch.device(device), torch.float64)


# On CUDA the perturbation writes through torch indexing instead of a NumPy view: it must leave the
# version counter of what the forward saved untouched, or the backward that follows would refuse to run.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


@pytest.fixture(scope="module")
def corpus():
    return oracle.load_module(FILE)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", NAMES)
def test_api_verdict_is_gradchecks(corpus, name, device):
    fn = getattr(corpus, name)
    expected = _gradcheck(fn, _args(corpus, device))
    assert expected == (name == "Checkpoint")  # the corpus itself is sound
    args = _args(corpus, device)
    before = [a.detach().clone() if isinstance(a, torch.Tensor) else None for a in args]
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state() if device == "cuda" else None
    report = gradviz.check(fn, args, raise_exception=False)
    assert report.passed == expected, report
    weight = next(b for b in report.result.blocks if b.input == 2)
    assert abs(weight.numerical).max() > 0, "the weight's numerical Jacobian must see the module's own weight move"
    for a, b in zip(args, before):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a.detach(), b) and a.grad is None
            assert a.detach().view(-1).view(torch.int64).equal(b.view(-1).view(torch.int64))  # bitwise
    assert torch.equal(torch.get_rng_state(), rng)
    if cuda_rng is not None:
        assert torch.equal(torch.cuda.get_rng_state(), cuda_rng)
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


class _RaisesWhenMoved(torch.autograd.Function):
    """Raises as soon as its first element is not where the caller left it (mid-perturbation)."""

    home: float = 0.0

    @staticmethod
    def forward(ctx, x):
        if x.flatten()[0].item() != _RaisesWhenMoved.home:
            raise ValueError("moved")
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return 3 * g


def test_caller_tensor_restored_bitwise_when_forward_raises_mid_perturbation():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    before = x.detach().clone()
    _RaisesWhenMoved.home = x[0].item()
    with pytest.raises(gradviz.UserCodeError):
        gradviz.check(_RaisesWhenMoved, (x,), raise_exception=False)
    assert x.detach().view(torch.int64).equal(before.view(torch.int64)) and x.grad is None


@pytest.mark.parametrize("name", NAMES)
def test_weight_larger_than_a_batch_chunk_gets_gradchecks_verdict(corpus, name):
    """48 weight elements: more than gradviz computes by plain calls before trying vmapped
    batches, which would perturb copies the module never reads."""
    fn = getattr(corpus, name)

    def args():
        torch.manual_seed(0)
        block = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.Tanh()).double()
        return (block, torch.randn(5, 8, dtype=torch.float64, requires_grad=True), *block.parameters())

    report = gradviz.check(fn, args(), raise_exception=False)
    assert report.passed == _gradcheck(fn, args())
    assert not [w for w in report.result.warnings if ZERO_BLOCK in w]
