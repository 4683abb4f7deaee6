"""Both Jacobians against torch.autograd.functional.jacobian, on every path and chunk size."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gradviz.core import jacobian as jacobian_module
from gradviz.core import numerical_jacobian as numerical_module
from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.core.jacobian import Progress, analytical_jacobian
from gradviz.core.numerical_jacobian import numerical_jacobian
from gradviz.schema.errors import Cancelled
from gradviz.schema.settings import CheckSettings
from tests.core.functions import CORRECT, ItemScale, SinCos, inputs_for

CPU = torch.device("cpu")


def torch_jacobian(fn, args):
    """PyTorch's own Jacobian blocks {(i, j): (rows, cols)} over differentiable outputs."""
    grad_idx = [j for j, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]

    def f(*leaves):
        call = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        for j, leaf in zip(grad_idx, leaves):
            call[j] = leaf.clone()
        out = fn.apply(*call)
        out = out if isinstance(out, tuple) else (out,)
        return tuple(o for o in out if o.is_floating_point())

    leaves = tuple(args[j].detach() for j in grad_idx)
    jac = torch.autograd.functional.jacobian(f, leaves)
    blocks = {}
    for i, per_output in enumerate(jac):
        for j, block in zip(grad_idx, per_output):
            rows = block.shape[: block.dim() - args[j].dim()].numel()
            blocks[i, j] = block.reshape(rows, -1).numpy()
    return blocks


def run(fn, args, **settings):
    prepared = prepare_inputs(args, CPU, torch.float64, [f"in{j}" for j in range(len(args))])
    return check_function(fn, prepared, CheckSettings(**settings))


@pytest.mark.parametrize("fn", CORRECT, ids=lambda f: f.__name__)
def test_both_jacobians_match_torch(fn):
    args = inputs_for(fn)
    expected = torch_jacobian(fn, args)
    result = run(fn, args)
    assert result.passed
    assert {(b.output, b.input) for b in result.blocks} == set(expected)
    for b in result.blocks:
        want = expected[b.output, b.input]
        torch.testing.assert_close(
            torch.from_numpy(b.analytic), torch.from_numpy(want), rtol=1e-10, atol=1e-12
        )
        torch.testing.assert_close(
            torch.from_numpy(b.numerical), torch.from_numpy(want), rtol=1e-6, atol=1e-7
        )


def jacobians_both_ways(fn, args, chunk_bytes=1 << 20):
    """Analytic and numerical blocks by the batched and the looped path: (a_batched, a_loop, n_batched, n_loop).

    Small Jacobians normally take the loop; here the batched path runs at any size.
    """
    small, jacobian_module.SMALL = jacobian_module.SMALL, 0
    try:
        return _jacobians_both_ways(fn, args, chunk_bytes)
    finally:
        jacobian_module.SMALL = small


def _jacobians_both_ways(fn, args, chunk_bytes):
    prepared = prepare_inputs(args, CPU, torch.float64, ["x"] * len(args))
    leaves = [prepared.args[j] for j in prepared.grad_indices]
    call = [a.clone() if isinstance(a, torch.Tensor) else a for a in prepared.args]
    outputs = fn.apply(*call)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    out_idx = [i for i, o in enumerate(outputs) if o.requires_grad]
    mutates = fn.__name__ in ("InPlaceDouble", "ReturnsInput")  # check_function detects both; here by name
    grads = prepared.grad_indices
    a_batched = analytical_jacobian(outputs, out_idx, leaves, grads, chunk_bytes=chunk_bytes)
    a_loop = analytical_jacobian(outputs, out_idx, leaves, grads, batched=False)
    n_batched = numerical_jacobian(
        fn.apply, prepared.args, out_idx, grads, eps=1e-6, clone_inputs=mutates, chunk_bytes=chunk_bytes
    )
    n_loop = numerical_jacobian(fn.apply, prepared.args, out_idx, grads, eps=1e-6, clone_inputs=mutates, batched=False)
    # the inputs are exactly as they were: perturbations are restored bit for bit
    for j in grads:
        assert torch.equal(prepared.args[j], prepare_inputs(args, CPU, torch.float64, ["x"] * len(args)).args[j])
    return a_batched, a_loop, n_batched, n_loop


@pytest.mark.parametrize("fn", CORRECT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("chunk_bytes", [1, 256, 1 << 20])
def test_batched_and_looped_paths_are_bitwise_equal(fn, chunk_bytes):
    a_batched, a_loop, n_batched, n_loop = jacobians_both_ways(fn, inputs_for(fn), chunk_bytes)
    assert a_loop.path == n_loop.path == "loop"
    for key in a_loop.blocks:
        np.testing.assert_array_equal(a_batched.blocks[key], a_loop.blocks[key])
        np.testing.assert_array_equal(n_batched.blocks[key], n_loop.blocks[key])


def test_backward_that_cannot_batch_falls_back_to_loop():
    result = run(ItemScale, inputs_for(ItemScale))
    assert result.analytic_path == "loop"
    assert result.passed


def test_batched_path_is_used_where_possible():
    g = torch.Generator().manual_seed(1)
    x, y = (torch.rand(40, generator=g, dtype=torch.float64).requires_grad_() for _ in range(2))
    result = run(SinCos, (x, 1.5, y))
    assert (result.analytic_path, result.numerical_path) == ("batched", "batched")
    assert result.passed and not result.warnings


def test_loop_is_chosen_only_when_clearly_cheaper_per_column():
    assert numerical_module.loop_is_faster(1e-5, [2e-5, 3e-5])
    assert not numerical_module.loop_is_faster(1e-5, [2e-5, 1.1e-5])  # within the noise margin once: keep batching
    assert not numerical_module.loop_is_faster(1e-5, [9e-5])  # one chunk alone decides nothing
    # a core busy elsewhere slows chunks down, never up: one chunk as fast as the loop keeps batching
    assert not numerical_module.loop_is_faster(1e-5, [1.1e-5, 3e-5, 3e-5])
    assert not numerical_module.loop_is_faster(None, [1.0, 1.0])  # nothing timed yet


def test_switching_to_the_loop_midway_changes_no_value(monkeypatch):
    """Once plain calls are timed cheaper the rest of the columns take them: bit for bit the same."""
    g = torch.Generator().manual_seed(1)
    x, y = (torch.rand(40, generator=g, dtype=torch.float64).requires_grad_() for _ in range(2))
    args = (x, 1.5, y)
    monkeypatch.setattr(numerical_module, "loop_is_faster", lambda *t: False)  # a loaded machine may time the loop cheaper
    batched = numerical_jacobian(SinCos.apply, args, [0, 1], [0, 2], eps=1e-6, chunk_bytes=4096)
    decided = []
    monkeypatch.setattr(numerical_module, "loop_is_faster", lambda *t: decided.append(t) or True)
    mixed = numerical_jacobian(SinCos.apply, args, [0, 1], [0, 2], eps=1e-6, chunk_bytes=4096)
    assert decided and batched.path == "batched" and mixed.path == "loop"
    for key in batched.blocks:
        np.testing.assert_array_equal(mixed.blocks[key], batched.blocks[key])


def test_small_jacobians_take_gradchecks_plain_calls():
    result = run(SinCos, inputs_for(SinCos))
    assert (result.analytic_path, result.numerical_path) == ("loop", "loop")


def test_progress_reaches_total_and_cancel_stops_between_chunks():
    seen = []
    args = inputs_for(SinCos)
    prepared = prepare_inputs(args, CPU, torch.float64, ["x", "s", "y"])
    check_function(SinCos, prepared, CheckSettings(chunk_bytes=64), progress=lambda d, t: seen.append((d, t)))
    total = seen[-1][1]
    # rows of both outputs, twice (the reentrancy check's second pass), + columns of both inputs
    assert seen[-1][0] == total == 2 * (2 * 5) + 5 + 5
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)

    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        check_function(SinCos, prepared, CheckSettings(chunk_bytes=64), cancel=cancel)


def test_progress_object_counts():
    p = Progress(10)
    p.advance(4)
    assert p.done == 4


def test_a_reference_given_by_the_caller_saves_the_numerical_jacobians_own_forward():
    """check_function's noise forward is also the numerical reference: two forwards a column, no more."""
    from gradviz.core.user_code import second_forward

    calls = []

    class Counted(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            calls.append(x.shape)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("not called")

    args = [torch.linspace(-1, 1, 3, dtype=torch.float64, requires_grad=True)]
    plain = numerical_jacobian(Counted.apply, args, [0], [0], eps=1e-6, batched=False)
    assert len(calls) == 2 * 3 + 1
    reference = second_forward(Counted, args)
    calls.clear()
    given = numerical_jacobian(Counted.apply, args, [0], [0], eps=1e-6, batched=False, reference=reference)
    assert len(calls) == 2 * 3
    np.testing.assert_array_equal(given.blocks[0, 0], plain.blocks[0, 0])
    assert reference[0].grad_fn is None  # no graph held while the Jacobian is computed
