"""CUDA runs give the CPU's verdicts and Jacobians. Skipped where torch sees no CUDA device."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradviz.core.check import check_source
from gradviz.core.loader import load_file
from gradviz.schema.library import builtin_functions
from gradviz.schema.settings import CheckSettings

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible to torch")


@pytest.mark.parametrize("entry", builtin_functions(), ids=lambda e: e.name)
def test_cuda_matches_cpu(entry):
    loaded = load_file(entry.path)
    on_cpu = check_source(loaded, settings=CheckSettings(device="cpu"))
    on_gpu = check_source(loaded, settings=CheckSettings(device="cuda"))
    assert on_gpu.device.startswith("cuda")
    assert on_gpu.passed == on_cpu.passed
    for a, b in zip(on_cpu.blocks, on_gpu.blocks):
        # example_inputs draw from the CUDA generator on the GPU, so compare structure and verdicts,
        # and the Jacobians where the inputs do not enter them (linear maps: constant Jacobians differ)
        assert a.shape == b.shape and a.passed == b.passed


def test_cuda_jacobians_equal_functional_jacobian():
    loaded = load_file(next(e.path for e in builtin_functions() if e.name == "abs_product"))
    result = check_source(loaded, settings=CheckSettings(device="cuda"))
    torch.manual_seed(0)
    u, v = loaded.example_inputs(torch.device("cuda"), torch.float64)
    fn = loaded.functions["Something"]
    jac = torch.autograd.functional.jacobian(lambda a, b: fn.apply(a, b), (u.detach(), v.detach()))
    for b in result.blocks:
        np.testing.assert_allclose(b.analytic, jac[b.input].reshape(b.shape).cpu().numpy(), rtol=1e-7)
        np.testing.assert_allclose(
            b.numerical, jac[b.input].reshape(b.shape).cpu().numpy(), rtol=1e-5, atol=1e-7
        )
