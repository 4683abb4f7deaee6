"""Forward mode with non-tensor arguments anywhere: gradviz's verdict and forward Jacobian are
gradcheck(check_forward_ad=True, check_backward_ad=False)'s, computed here on the same inputs."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch

import gradviz
from tests.cli.runner import gradviz as run_cli
from tests.core import jvp_positions as jp

FUNCTIONS = [
    jp.NonTensorFirst,
    jp.NonTensorBetween,
    jp.NonTensorLast,
    jp.NonTensorFirstWrongJvp,
    jp.NonTensorBetweenWrongJvp,
]
FORWARD_ONLY = {"check_forward_ad": True, "check_backward_ad": False}


def gradcheck_says(fn, args) -> bool:
    copies = tuple(a.detach().clone().requires_grad_(True) if isinstance(a, torch.Tensor) else a for a in args)
    return torch.autograd.gradcheck(
        fn.apply, copies, **FORWARD_ONLY, check_undefined_grad=False, raise_exception=False
    )


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_verdict_equals_gradcheck_whatever_the_non_tensors_position(fn):
    torch.manual_seed(0)
    args = jp.arguments(fn)
    expected = gradcheck_says(fn, args)
    assert expected == ("Wrong" not in fn.__name__)  # the oracle tells the right jvps from the wrong
    report = gradviz.check(fn, args, **FORWARD_ONLY, raise_exception=False)
    assert report.passed == expected, report
    assert not any("zero tangent" in w for w in report.result.warnings), report


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_forward_blocks_are_gradchecks_forward_jacobian(fn):
    torch.manual_seed(0)
    args = jp.arguments(fn)
    tensors = [j for j, a in enumerate(args) if isinstance(a, torch.Tensor)]
    report = gradviz.check(fn, args, **FORWARD_ONLY, raise_exception=False)
    outputs = fn.apply(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    # gradcheck's own forward-mode Jacobian: [k-th tensor input][output], (input numel, output numel)
    gradcheck = sys.modules["torch.autograd.gradcheck"]
    jac = gradcheck._get_analytical_jacobian_forward_ad(fn.apply, args, outputs)
    assert {(b.output, b.input) for b in report.result.forward_blocks} == {
        (i, j) for i in range(len(outputs)) for j in tensors
    }
    for block in report.result.forward_blocks:
        expected = jac[tensors.index(block.input)][block.output].T
        np.testing.assert_allclose(block.analytic, expected.numpy(), rtol=0, atol=1e-12)
    if fn is jp.NonTensorBetweenWrongJvp:
        assert [(b.output, b.input) for b in report.result.forward_blocks if not b.passed] == [(1, 2)]


def test_cli_checks_the_leading_non_tensor_pattern_as_gradcheck_does(write_source):
    path = write_source(
        '''
        import torch


        class Test(torch.autograd.Function):
            @staticmethod
            def forward(ctx, nt, x):
                return x.clone()

            @staticmethod
            def jvp(ctx, _, x_t):
                return x_t


        def example_inputs(device, dtype):
            return (1, torch.randn(3, 2, device=device, dtype=dtype, requires_grad=True))
        '''
    )
    torch.manual_seed(0)
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    assert gradcheck_says(namespace["Test"], (1, x))
    out = run_cli("check", str(path), "--forward-ad", "--no-backward-ad", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["passed"] is True
    assert not any("zero tangent" in w for w in data["warnings"])
    (block,) = data["forward_blocks"]
    assert block["input"] == 1 and block["failing"] == 0
