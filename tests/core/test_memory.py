"""Saved-for-backward bytes and the fused conv-BN study, with PyTorch as the oracle."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gradviz.core import memory
from gradviz.core.memory import conv_bn_study, expected_saved_difference, memory_sweep, saved_bytes
from gradviz.core.saved_list import measure_saved
from gradviz.schema.errors import SettingsError

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def direct_count(fn, *args) -> tuple[int, int]:
    """(bytes, storages) of what the pack hook sees, each storage once: the oracle for saved_bytes."""
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return sum(storages.values()), len(storages)


def fused_function():
    from gradviz.core.loader import load_file
    from gradviz.schema.library import find_builtin

    return load_file(find_builtin("fused_conv_bn")).functions["FusedConvBN2DFunction"]


def _inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 4, generator=g, requires_grad=True)
    w = torch.randn(4, 3, generator=g, dtype=torch.float64).float().requires_grad_()
    return x, w


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: (x @ w).sin(),
        lambda x, w: torch.exp(x).sum() * w,
        lambda x, w: torch.tanh(x @ w) @ w.T,
    ],
    ids=["matmul-sin", "exp", "tanh-chain"],
)
def test_saved_bytes_matches_a_direct_hook_count(fn):
    x, w = _inputs()
    expected_bytes, expected_count = direct_count(fn, x, w)
    got = saved_bytes(fn, (x, w))
    assert (got.saved_bytes, got.count) == (expected_bytes, expected_count)
    assert got.ctx_attribute_bytes == 0


def test_saved_bytes_of_a_module_forward():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x = torch.randn(3, 4, requires_grad=True)
    assert saved_bytes(model, (x,)).saved_bytes == direct_count(model, x)[0]


def test_shared_storage_is_counted_once():
    x = torch.randn(6, 7, requires_grad=True)
    got = saved_bytes(lambda t: t * t, x)  # mul saves self and other: the same tensor twice
    assert len(got.tensors) == 2
    assert [t.shared for t in got.tensors] == [False, True]
    assert got.count == 1
    assert got.saved_bytes == x.untyped_storage().nbytes()


def test_a_saved_view_counts_its_whole_storage():
    base = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
    got = saved_bytes(lambda b: b[2:5].sin(), base)  # sin saves its input, a view of base
    assert got.tensors[0].shape == (3, 4)
    assert got.saved_bytes == base.untyped_storage().nbytes()
    assert got.saved_bytes > base[2:5].numel() * base.element_size()


class KeepsCtxTensors(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.scale = x.abs().amax(dim=0)  # a new tensor, kept as a ctx attribute
        ctx.alias = x  # the saved input again: already counted
        ctx.pair = [x.sum(dim=1), 2.0]  # a tensor inside a list
        return x * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale


def test_ctx_attribute_tensors_are_reported_separately():
    x = torch.randn(5, 3, requires_grad=True)
    got = saved_bytes(KeepsCtxTensors, (x,))
    assert got.saved_bytes == direct_count(KeepsCtxTensors.apply, x)[0] == x.untyped_storage().nbytes()
    out = KeepsCtxTensors.apply(x)
    node = out.grad_fn  # a custom Function's node is its ctx
    expected = node.scale.untyped_storage().nbytes() + node.pair[0].untyped_storage().nbytes()
    assert got.ctx_attribute_bytes == expected
    assert sorted(t.shape for t in got.ctx_tensors) == sorted(
        [tuple(node.scale.shape), tuple(node.pair[0].shape)]
    )


def test_builtin_fused_function_saves_input_and_weight_and_keeps_stats_on_ctx():
    fused = fused_function()
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    got = saved_bytes(fused, (x, w))
    assert got.saved_bytes == x.untyped_storage().nbytes() + w.untyped_storage().nbytes()
    node = fused.apply(x, w).grad_fn
    assert (
        got.ctx_attribute_bytes
        == node.sum.untyped_storage().nbytes() + node.sqrt_var.untyped_storage().nbytes()
    )


def test_hooked_forward_still_gives_the_right_gradients():
    x, w = _inputs()
    fn = lambda x, w: torch.tanh(x @ w).sum()  # noqa: E731
    expected = torch.autograd.grad(fn(x, w), (x, w))
    _, out = measure_saved(fn, (x, w))
    got = torch.autograd.grad(out, (x, w))
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


CONFIGS = [
    # layers, shape, out_channels, kernel, dtype
    (1, (2, 3, 8, 8), 4, 3, "float32"),
    (2, (3, 2, 9, 7), 5, 3, "float64"),
    (3, (2, 3, 12, 12), 6, 2, "float32"),
    (2, (1, 4, 11, 11), 3, 5, "float64"),
    (4, (2, 3, 10, 10), 4, 1, "float32"),
]


@pytest.mark.parametrize(("layers", "shape", "out_channels", "kernel", "dtype"), CONFIGS)
def test_measured_difference_equals_the_formula(layers, shape, out_channels, kernel, dtype):
    study = conv_bn_study(layers, shape, out_channels, kernel, dtype=dtype)
    assert study.saved_difference_bytes == study.formula_bytes
    assert study.formula_bytes == expected_saved_difference(layers, shape, out_channels, kernel, dtype)
    assert study.fused.saved.saved_bytes < study.unfused.saved.saved_bytes


@pytest.mark.parametrize(("layers", "shape", "out_channels", "kernel", "dtype"), CONFIGS[:3])
def test_the_difference_is_the_conv_outputs_and_batch_norm_stats(layers, shape, out_channels, kernel, dtype):
    """What the unfused stack saves beyond the fused one, tensor by tensor, from PyTorch itself."""
    study = conv_bn_study(layers, shape, out_channels, kernel, dtype=dtype)
    key = lambda t: (t.shape, t.dtype, t.bytes)  # noqa: E731
    extra = Counter(map(key, study.unfused.saved.tensors)) - Counter(map(key, study.fused.saved.tensors))
    dt = getattr(torch, dtype)
    x = torch.empty(shape, dtype=dt, device="meta")
    expected = Counter()
    for _ in range(layers):
        w = torch.empty(out_channels, x.shape[1], kernel, kernel, dtype=dt, device="meta")
        x = F.conv2d(x, w)  # the conv output: batch norm's saved input
        expected[(tuple(x.shape), dtype, x.numel() * x.element_size())] += 1
        stats = torch.empty(out_channels, dtype=dt)  # save_mean and save_invstd
        expected[(tuple(stats.shape), dtype, stats.untyped_storage().nbytes())] += 2
    assert extra == expected
    assert sum(b * n for (_, _, b), n in extra.items()) == study.formula_bytes


def test_fused_agrees_with_its_formula_tightly_and_with_batchnorm2d_within_the_formula_gap():
    study = conv_bn_study(2, (4, 3, 12, 12), 6, 3, dtype="float64")
    assert study.outputs_match and study.grads_match
    by = {(c.against, c.what): c for c in study.comparisons}
    assert len(by) == 6 and all(c.passed for c in by.values())
    # The two batch-norm formulas genuinely differ: far beyond rounding, within the derived gap.
    output = by["unfused", "output"]
    assert output.max_difference == study.max_output_difference
    assert study.max_output_difference > 100 * study.reference_rtol * output.scale
    assert output.rtol == pytest.approx(2 * study.formula_gap + study.reference_rtol)
    assert by["reference", "output"].max_difference <= study.reference_rtol * by["reference", "output"].scale


def test_independent_check_of_the_output_against_batchnorm2d():
    """The study's fused output, recomputed here, differs from nn.BatchNorm2d by the exact factor r."""
    fused = fused_function()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 3, 9, 9, generator=g, dtype=torch.float64)
    w = torch.randn(5, 3, 3, 3, generator=g, dtype=torch.float64)
    y = F.conv2d(x, w)
    z = nn.BatchNorm2d(5, eps=1e-3, affine=False, track_running_stats=False).double()(y)
    n = y.numel() // y.shape[1]
    var = y.var(dim=(0, 2, 3), unbiased=True)
    r = (var * (n - 1) / n + 1e-3).sqrt() / (var.sqrt() + 1e-3)
    torch.testing.assert_close(fused.apply(x, w, 1e-3), z * r[None, :, None, None], rtol=1e-12, atol=1e-12)


class WrongBackward(torch.autograd.Function):
    """The built-in Function with a weight gradient 2% off."""

    inner = None  # the real built-in, set by the test

    @staticmethod
    def forward(ctx, x, w, eps=1e-3):
        ctx.save_for_backward(x, w)
        return WrongBackward.inner.apply(x, w, eps)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        with torch.enable_grad():
            x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
            gx, gw = torch.autograd.grad(WrongBackward.inner.apply(x, w), (x, w), grad)
        return gx, gw * 1.02, None


def test_a_wrong_backward_is_caught(monkeypatch):
    monkeypatch.setattr(WrongBackward, "inner", fused_function())
    monkeypatch.setattr(memory, "fused_function", lambda: WrongBackward)
    study = conv_bn_study(1, (4, 3, 10, 10), 4, 3, dtype="float64")
    assert study.outputs_match
    assert not study.grads_match
    failed = {(c.against, c.what) for c in study.comparisons if not c.passed}
    assert ("reference", "weight gradients") in failed


def test_too_small_a_spatial_size_is_refused_clearly():
    with pytest.raises(SettingsError, match=r"Layer 2 of 2 would output 0x0.*at least 5x5"):
        conv_bn_study(2, (2, 3, 4, 4), 4, 3)
    with pytest.raises(SettingsError, match="Layer 3 of 3"):
        expected_saved_difference(3, (2, 3, 6, 6), 4, 3, "float32")
    with pytest.raises(SettingsError, match="Layer 8 of 8"):
        memory_sweep(range(1, 9), (2,), image=(3, 16, 16))


def test_bad_settings_are_refused():
    with pytest.raises(SettingsError, match="float32"):
        conv_bn_study(dtype="float16")
    with pytest.raises(SettingsError, match="device"):
        conv_bn_study(device="tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message when CUDA is missing")
def test_cuda_without_cuda_is_refused():
    with pytest.raises(SettingsError, match="CUDA was chosen but"):
        conv_bn_study(device="cuda")


def test_sweep_saved_bytes_grow_with_layers_and_batch():
    rows = memory_sweep(range(1, 9), (2, 3), image=(2, 17, 17), out_channels=3)
    assert len(rows) == 16
    for row in rows:
        assert row.saved_difference_bytes == row.formula_bytes
        assert row.unfused_peak_bytes is None and row.fused_peak_bytes is None
    for batch in (2, 3):
        series = [r for r in rows if r.batch == batch]
        for field in ("unfused_saved_bytes", "fused_saved_bytes", "saved_difference_bytes"):
            values = [getattr(r, field) for r in series]
            assert values == sorted(values) and len(set(values)) == len(values), field
    for n in range(1, 9):
        small, big = (r for r in rows if r.layers == n)
        assert big.unfused_saved_bytes > small.unfused_saved_bytes
        assert big.fused_saved_bytes > small.fused_saved_bytes


def test_to_dict_is_strict_json_with_the_agreed_keys():
    d = conv_bn_study().to_dict()
    json.dumps(d, allow_nan=False)
    assert set(d) == {
        "device", "layers", "shape", "variants", "saved_difference_bytes", "formula_bytes",
        "outputs_match", "grads_match",
    }  # fmt: skip
    assert d["device"] == "cpu" and d["layers"] == 1 and d["shape"] == [8, 3, 32, 32]
    assert set(d["variants"]) == {"unfused", "fused"}
    assert "saved_bytes" in d["variants"]["unfused"]
    assert {"saved_bytes", "ctx_attribute_bytes", "max_output_difference"} <= set(d["variants"]["fused"])
    for variant in d["variants"].values():
        assert "peak_bytes" not in variant and "end_of_forward_bytes" not in variant
    assert d["outputs_match"] is True and d["grads_match"] is True


def test_the_users_random_state_is_untouched():
    before = torch.get_rng_state()
    conv_bn_study(1, (2, 3, 8, 8), 4, 3)
    assert torch.equal(before, torch.get_rng_state())


@needs_cuda
@pytest.mark.cuda
def test_cuda_peaks_are_reported_and_fused_peaks_lower():
    study = conv_bn_study(8, (16, 16, 64, 64), 32, 3, device="cuda")
    d = study.to_dict()
    json.dumps(d, allow_nan=False)
    unfused, fused = d["variants"]["unfused"], d["variants"]["fused"]
    for variant in (unfused, fused):
        assert variant["peak_bytes"] > 0 and variant["end_of_forward_bytes"] > 0
        assert variant["peak_bytes"] >= variant["end_of_forward_bytes"]
    assert fused["end_of_forward_bytes"] < unfused["end_of_forward_bytes"]
    assert fused["peak_bytes"] < unfused["peak_bytes"]
    assert d["outputs_match"] and d["grads_match"]
    assert d["device"] == "cuda:0"


@needs_cuda
@pytest.mark.cuda
def test_cuda_sweep_reports_peaks():
    rows = memory_sweep((1, 2), (4,), image=(3, 16, 16), device="cuda")
    assert all(r.unfused_peak_bytes > 0 and r.fused_peak_bytes > 0 for r in rows)


def test_worker_memory_request_sweeps_only_stacks_that_fit(tmp_path):
    """A small image allows fewer than 8 layers: the sweep stops there instead of failing."""
    from gradviz.schema.requests import Envelope, MemoryRequest
    from gradviz.schema.settings import MemoryOptions
    from gradviz.worker.handlers import handle_memory

    options = MemoryOptions(layers=2, shape=(2, 3, 8, 8), out_channels=4, kernel=3)
    payload = handle_memory(Envelope(1, str(tmp_path), MemoryRequest(options)), None)
    assert payload["study"]["layers"] == 2
    assert max(row["layers"] for row in payload["sweep"]) == 3  # 8 -> 6 -> 4 -> 2: three convs fit
