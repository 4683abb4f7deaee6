"""Every built-in example, run through the product's loader: gradviz's verdict is gradcheck's."""

from __future__ import annotations

import pytest
import torch

from gradviz.core.check import check_source
from gradviz.core.loader import choose_function, load_file
from gradviz.schema.library import CATEGORIES, builtin_functions
from gradviz.schema.settings import CheckSettings
from tests.real_world.oracle import gradcheck_passes

ENTRIES = builtin_functions()
CPU = torch.device("cpu")


def gradcheck_verdict(fn, loaded, seed=0, dtype=torch.float64) -> bool:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        args = loaded.example_inputs(CPU, dtype)
    return gradcheck_passes(
        fn.apply,
        tuple(args),
        copies=True,
        eps=1e-6,
        atol=1e-5,
        rtol=1e-3,
        check_undefined_grad=False,
        check_batched_grad=False,
    )


def test_library_is_complete():
    names = {e.name for e in ENTRIES}
    assert {
        "linear",
        "mul_constant",
        "mul_constant_lazy_grads",
        "kill_head",
        "abs_product",
        "fused_conv_bn",
    } <= names
    buggy = [e for e in ENTRIES if e.category == "Buggy twins"]
    assert len(buggy) >= 5 and all(e.bug for e in buggy)
    assert all(e.category in CATEGORIES and e.docstring for e in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_verdict_agrees_with_gradcheck(entry, seed):
    loaded = load_file(entry.path)
    fn = choose_function(loaded)
    result = check_source(loaded, fn.__name__, CheckSettings(seed=seed))
    assert result.passed == gradcheck_verdict(fn, loaded, seed)
    assert result.passed == (entry.bug is None)
    if entry.bug:
        failing = [b for b in result.blocks if not b.passed]
        worst = failing[0]
        label = result.cell_label(worst, *worst.worst)
        assert " / " in label and label.startswith(f"out{worst.output}[")


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.bug is None], ids=lambda e: e.name)
def test_correct_examples_match_functional_jacobian(entry):
    loaded = load_file(entry.path)
    fn = choose_function(loaded)
    result = check_source(loaded, fn.__name__)
    torch.manual_seed(0)
    args = loaded.example_inputs(CPU, torch.float64)
    grad_idx = [j for j, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]

    def f(*leaves):
        call = list(args)
        for j, leaf in zip(grad_idx, leaves):
            call[j] = leaf
        out = fn.apply(*call)
        return out if isinstance(out, tuple) else (out,)

    jac = torch.autograd.functional.jacobian(f, tuple(args[j].detach() for j in grad_idx))
    for b in result.blocks:
        expected = jac[b.output][grad_idx.index(b.input)].reshape(b.shape).numpy()
        torch.testing.assert_close(
            torch.from_numpy(b.analytic), torch.from_numpy(expected), rtol=1e-7, atol=1e-9
        )
        torch.testing.assert_close(
            torch.from_numpy(b.numerical), torch.from_numpy(expected), rtol=1e-4, atol=1e-6
        )


def test_float32_gets_the_gradcheck_advice():
    entry = next(e for e in ENTRIES if e.name == "linear")
    result = check_source(load_file(entry.path), settings=CheckSettings(dtype="float32"))
    assert result.dtype == "float32"
    assert any("float64" in w and "float32" in w for w in result.warnings)
