"""What autograd keeps for backward, and the fused conv-BN study built on it.

``saved_bytes`` (in ``gradviz.core.saved_list``) runs one forward under
``torch.autograd.graph.saved_tensors_hooks`` and lists every tensor the pack hook sees, with the
graph node that saved it, each storage charged once. The result types are the torch-free
``gradviz.schema.memory``.

``conv_bn_study`` measures the seed tutorial's claim: a stack of Conv2d + BatchNorm2d layers
against the same stack of ``FusedConvBN2DFunction`` (the built-in library file, loaded through the
product loader), with the same weights. It checks the measured difference against
``expected_saved_difference`` and checks that the saving does not change the answer.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Sequence
from functools import cache

import torch
import torch.nn.functional as F
from torch import nn

from gradviz.core.inputs import resolve_device
from gradviz.core.saved_list import measure_saved, saved_bytes
from gradviz.core.vjp import vjp
from gradviz.schema.errors import SettingsError
from gradviz.schema.memory import Comparison, ConvBNStudy, SweepRow, VariantMemory

__all__ = ["conv_bn_study", "expected_saved_difference", "memory_sweep", "saved_bytes"]

EPS = 1e-3  # the tutorial's batch-norm eps, used by both variants
DTYPES = {"float32": torch.float32, "float64": torch.float64}
# Fused vs. the same formula written with plain autograd ops: only rounding differs, and it
# compounds layer by layer. Normwise: max|a - b| <= layers * rtol * max|b|.
REFERENCE_RTOL = {torch.float32: 1e-4, torch.float64: 1e-11}


# --------------------------------------------------------------------------- the conv-BN study


def expected_saved_difference(
    layers: int, shape: Sequence[int], out_channels: int, kernel: int, dtype: str | torch.dtype
) -> int:
    """Bytes the unfused stack saves for backward beyond the fused one (torch 2.13).

    Per layer k (input X_k, weight W_k, conv output Y_k = conv(X_k, W_k) of shape
    (N, C_out, H_k, W_k) with H_k = H - k(K-1), W_k = W - k(K-1)), measured with the pack hook:

    - unfused: ConvolutionBackward0 saves X_k and W_k; NativeBatchNormBackward0 saves its input
      Y_k and its two C_out-sized statistics (save_mean, save_invstd), in the input's dtype.
      X_k for k > 1 is layer k-1's batch-norm output, saved only as the next conv's input.
    - fused: save_for_backward(X_k, W_k). X_k for k > 1 is layer k-1's fused output, same shape
      and dtype as the unfused one. ``ctx.sum`` and ``ctx.sqrt_var`` are ctx attributes, not
      saved tensors: they are reported as ctx_attribute_bytes, outside saved_bytes.

    The X_k and W_k terms cancel (every saved tensor has its own storage, each counted once), and
    the last layer's output is saved by neither, so with s = the dtype's item size:

        difference = s * sum_{k=1..L} (N * C_out * H_k * W_k + 2 * C_out)
    """
    dtype = _dtype(dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    n = shape[0]
    sizes = _check_shape(layers, tuple(shape), out_channels, kernel)
    return itemsize * sum(n * out_channels * h * w + 2 * out_channels for h, w in sizes)


@cache
def fused_function() -> type[torch.autograd.Function]:
    """The built-in FusedConvBN2DFunction, loaded the way a user's file is."""
    from gradviz.core.loader import load_file
    from gradviz.schema.library import find_builtin

    path = find_builtin("fused_conv_bn")
    if path is None:
        raise SettingsError(
            "The built-in resources/functions/fused_conv_bn.py is missing; reinstall gradviz."
        )
    return load_file(path).functions["FusedConvBN2DFunction"]


def conv_bn_study(
    layers: int = 1,
    shape: Sequence[int] = (8, 3, 32, 32),
    out_channels: int = 16,
    kernel: int = 3,
    device: str = "cpu",
    dtype: str | torch.dtype = "float32",
    *,
    seed: int = 0,
) -> ConvBNStudy:
    """Measure a stack of ``layers`` Conv2d + BatchNorm2d pairs against FusedConvBN2DFunction.

    Layer 1 maps C -> out_channels, later layers out_channels -> out_channels, all with a
    ``kernel`` x ``kernel`` convolution (no bias, stride 1, no padding); batch norm with eps=1e-3,
    no affine weights, no running statistics. Both variants get the same weights and input,
    drawn from a private generator seeded with ``seed``.
    """
    return _study(layers, shape, out_channels, kernel, device, dtype, seed=seed, check=True)


def memory_sweep(
    layers: Iterable[int] = range(1, 9),
    batches: Iterable[int] = (1, 8, 32),
    *,
    image: Sequence[int] = (3, 32, 32),
    out_channels: int = 16,
    kernel: int = 3,
    device: str = "cpu",
    dtype: str | torch.dtype = "float32",
    seed: int = 0,
) -> list[SweepRow]:
    """One row per (layers, batch): saved bytes of both variants, and peaks on CUDA.

    ``image`` is (C, H, W). Memory only: the output checks are ``conv_bn_study``'s job.
    """
    layers, batches = list(layers), list(batches)
    channels, height, width = image
    for n in layers:  # refuse before doing any work
        _check_shape(n, (max(batches, default=1), channels, height, width), out_channels, kernel)
    rows = []
    for n in layers:
        for batch in batches:
            s = _study(
                n,
                (batch, channels, height, width),
                out_channels,
                kernel,
                device,
                dtype,
                seed=seed,
                check=False,
            )
            rows.append(
                SweepRow(
                    n,
                    batch,
                    s.unfused.saved.saved_bytes,
                    s.fused.saved.saved_bytes,
                    s.fused.saved.ctx_attribute_bytes,
                    s.saved_difference_bytes,
                    s.formula_bytes,
                    s.unfused.peak_bytes,
                    s.fused.peak_bytes,
                )
            )
    return rows


def compare_with_unfused(out_f, grads_f, out_n, grads_n, gap: float, tight: float):
    """Fused against nn.Conv2d + nn.BatchNorm2d: a tolerance derived from the formula gap.

    The seed's fused batch norm is out = (y - mean) / (sqrt(var_unbiased) + eps); nn.BatchNorm2d
    computes z = (y - mean) / sqrt(var_biased + eps). For the same y they differ, channel by
    channel, by an exact factor: out = r * z with

        r = sqrt(var_biased + eps) / (sqrt(var_unbiased) + eps),  var_biased = var_unbiased (n-1)/n,
        r - 1 ~ -1/(2n) + eps/(2 var) - eps/sqrt(var)   (n = N*H*W values per channel),

    so one layer's outputs differ by at most max_c|r - 1| * max|z| (about 1e-3 relative for unit
    variance: the eps terms dominate). The gap is ``gap`` = sum over layers of max_c |r_kc - 1|,
    taken from the batch statistics of the run itself. The stack is not a single factor (the next
    conv mixes channels scaled differently; the next batch norm removes only the common scale), and
    gradients also carry z * dr/dx, which is of the same order as r - 1. So fused vs nn is checked
    against rtol = 2 * gap for the output and 10 * gap for gradients, plus ``tight`` for rounding;
    the multipliers are first-order allowances, not bounds, and where a channel's variance is close
    to eps (r far from 1) fused and nn.BatchNorm2d genuinely disagree and the check says so.

    This check alone could hide a wrong backward inside the tolerance, so the fused Function is
    also compared, tightly (rounding only), with the same formula written in plain autograd ops.
    """
    rtol = {"output": 2 * gap + tight, "gradients": 10 * gap + tight}
    checks = [
        _compare("unfused", "output", out_f, out_n, rtol["output"]),
        _compare("unfused", "input gradient", grads_f[0], grads_n[0], rtol["gradients"]),
        _compare("unfused", "weight gradients", grads_f[1], grads_n[1], rtol["gradients"]),
    ]
    return checks, rtol


def _study(layers, shape, out_channels, kernel, device, dtype, *, seed: int, check: bool) -> ConvBNStudy:
    dev = resolve_device(device)
    dt = _dtype(dtype)
    shape = tuple(int(s) for s in shape)
    sizes = _check_shape(layers, shape, out_channels, kernel)
    fused_fn = fused_function()

    # Same numbers for every variant, from a private generator (the user's RNG is untouched).
    gen = torch.Generator().manual_seed(seed)
    weights, in_channels = [], shape[1]
    for _ in range(layers):
        bound = 1 / math.sqrt(in_channels * kernel * kernel)  # nn.Conv2d's default init range
        w = (
            torch.rand(out_channels, in_channels, kernel, kernel, generator=gen, dtype=torch.float64) * 2 - 1
        ) * bound
        weights.append(w.to(dev, dt))
        in_channels = out_channels
    x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dev, dt)
    last_h, last_w = sizes[-1]
    grad_out = torch.randn(shape[0], out_channels, last_h, last_w, generator=gen, dtype=torch.float64).to(
        dev, dt
    )

    unfused_stack = _unfused_stack(weights, shape[1], out_channels, kernel, dev, dt)
    fused_weights = [nn.Parameter(w.clone()) for w in weights]

    def fused_stack(inp):
        for w in fused_weights:
            inp = fused_fn.apply(inp, w, EPS)
        return inp

    variants = {
        "unfused": (unfused_stack, list(unfused_stack.parameters())),
        "fused": (fused_stack, fused_weights),
    }
    memory = {}
    if dev.type == "cuda":  # before anything else is left on the device
        for name, (forward, params) in variants.items():
            memory[name] = _cuda_memory(forward, params, x, grad_out, dev)

    results = {}
    for name, (forward, params) in variants.items():
        leaf = x.clone().requires_grad_()
        labels = {"x (the input)": leaf, **{f"conv {k} weight": w for k, w in enumerate(params, start=1)}}
        saved, out = measure_saved(forward, (leaf,), labels)
        grads = _backward(out, leaf, params, grad_out) if check else None
        peak, end = memory.get(name, (None, None))
        results[name] = (VariantMemory(saved, peak, end), out.detach(), grads)
        del out

    unfused, fused = results["unfused"][0], results["fused"][0]
    comparisons, nn_rtol, gap = [], {}, float("nan")
    outputs_match = grads_match = False
    tight = layers * REFERENCE_RTOL[dt]
    if check:
        ref_weights = [w.clone().requires_grad_() for w in weights]
        leaf = x.clone().requires_grad_()
        ref_out, gap = _reference_stack(leaf, ref_weights)
        ref_grads = _backward(ref_out, leaf, ref_weights, grad_out)
        _, out_f, grads_f = results["fused"]
        _, out_n, grads_n = results["unfused"]
        comparisons, nn_rtol = compare_with_unfused(out_f, grads_f, out_n, grads_n, gap, tight)
        comparisons += [
            _compare("reference", "output", out_f, ref_out.detach(), tight),
            _compare("reference", "input gradient", grads_f[0], ref_grads[0], tight),
            _compare("reference", "weight gradients", grads_f[1], ref_grads[1], tight),
        ]
        outputs_match = all(c.passed for c in comparisons if c.what == "output")
        grads_match = all(c.passed for c in comparisons if c.what != "output")

    return ConvBNStudy(
        device=str(dev),
        dtype=str(dt).removeprefix("torch."),
        layers=layers,
        shape=shape,
        out_channels=out_channels,
        kernel=kernel,
        unfused=unfused,
        fused=fused,
        saved_difference_bytes=unfused.saved.saved_bytes - fused.saved.saved_bytes,
        formula_bytes=expected_saved_difference(layers, shape, out_channels, kernel, dt),
        outputs_match=outputs_match,
        grads_match=grads_match,
        comparisons=comparisons,
        nn_rtol=nn_rtol,
        reference_rtol=tight,
        formula_gap=gap,
    )


def _unfused_stack(weights, in_channels, out_channels, kernel, dev, dt) -> nn.Sequential:
    modules = []
    for w in weights:
        # skip_init: no random init, so the global RNG is not touched; the weight is copied in.
        conv = nn.utils.skip_init(
            nn.Conv2d, in_channels, out_channels, kernel, bias=False, device=dev, dtype=dt
        )
        with torch.no_grad():
            conv.weight.copy_(w)
        bn = nn.BatchNorm2d(
            out_channels, eps=EPS, affine=False, track_running_stats=False, device=dev, dtype=dt
        )
        modules += [conv, bn]
        in_channels = out_channels
    return nn.Sequential(*modules)


def _reference_stack(x: torch.Tensor, weights: list[torch.Tensor]) -> tuple[torch.Tensor, float]:
    """The fused formula in plain autograd ops, and the gap sum_k max_c |r_kc - 1| to nn.BatchNorm2d."""
    gap = 0.0
    for w in weights:
        y = F.conv2d(x, w)
        n = y.numel() // y.shape[1]
        mean = y.mean(dim=(0, 2, 3))
        var = y.var(dim=(0, 2, 3), unbiased=True)
        x = (y - mean[None, :, None, None]) / (var.sqrt() + EPS)[None, :, None, None]
        v = var.detach().double()
        r = (v * (n - 1) / n + EPS).sqrt() / (v.sqrt() + EPS)  # fused / nn.BatchNorm2d, per channel
        gap += (r - 1).abs().max().item()
    return x, gap


def _backward(out, leaf, params, grad_out) -> tuple[torch.Tensor, torch.Tensor]:
    """Input gradient and all weight gradients (flattened, concatenated) for out·grad_out."""
    grads = vjp((out,), [leaf, *params], (grad_out,), allow_unused=False)
    return grads[0], torch.cat([g.flatten() for g in grads[1:]])


def _compare(against: str, what: str, a: torch.Tensor, b: torch.Tensor, rtol: float) -> Comparison:
    diff = (a - b).abs().max().item()
    scale = b.abs().max().item()
    passed = math.isfinite(diff) and math.isfinite(scale) and diff <= rtol * scale
    return Comparison(against, what, diff, scale, rtol, passed)


def _cuda_memory(forward, params, x, grad_out, dev) -> tuple[int, int]:
    """(peak, end_of_forward) bytes above the starting allocation, as the PyTorch tutorial measures.

    A warm-up pass first, so cuDNN/cuBLAS handles and workspaces created on first use are not
    charged to whichever variant runs first. Then: reset the peak statistics, note
    memory_allocated, run forward, synchronize, note memory_allocated again, run backward,
    synchronize, read max_memory_allocated.
    """
    for _ in range(2):  # warm-up, then the measured pass
        for p in params:
            p.grad = None
        leaf = x.clone().requires_grad_()
        gc.collect()
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        start = torch.cuda.memory_allocated(dev)
        out = forward(leaf)
        torch.cuda.synchronize(dev)
        end_of_forward = torch.cuda.memory_allocated(dev) - start
        out.backward(grad_out)
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev) - start
        del out, leaf
    for p in params:
        p.grad = None
    return peak, end_of_forward


def _layer_sizes(layers: int, height: int, width: int, kernel: int) -> list[tuple[int, int]]:
    # each unpadded, stride-1 convolution trims kernel-1 rows and columns
    return [(height - k * (kernel - 1), width - k * (kernel - 1)) for k in range(1, layers + 1)]


def _check_shape(layers, shape, out_channels, kernel) -> list[tuple[int, int]]:
    if len(shape) != 4 or any(int(s) < 1 for s in shape):
        raise SettingsError(f"The input shape must be four positive sizes (N, C, H, W); got {tuple(shape)}.")
    if layers < 1 or out_channels < 1 or kernel < 1:
        raise SettingsError(
            f"layers, out_channels and kernel must be at least 1; got {layers}, {out_channels}, {kernel}."
        )
    n, _, height, width = shape
    sizes = _layer_sizes(layers, height, width, kernel)
    for k, (h, w) in enumerate(sizes, start=1):
        if h < 1 or w < 1:
            need = layers * (kernel - 1) + 1
            raise SettingsError(
                f"Layer {k} of {layers} would output {h}x{w}: each {kernel}x{kernel} convolution (no padding) "
                f"shrinks the {height}x{width} input by {kernel - 1}. Use fewer layers, a smaller kernel, "
                f"or an input of at least {need}x{need}."
            )
    last_h, last_w = sizes[-1]
    if n * last_h * last_w < 2:
        raise SettingsError(
            f"Batch norm needs at least 2 values per channel, but layer {layers} outputs "
            f"{n}x{last_h}x{last_w}; use a bigger batch or input."
        )
    return sizes


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in DTYPES:
        return DTYPES[dtype.removeprefix("torch.")]
    raise SettingsError(f"dtype must be 'float32' or 'float64'; got {dtype!r}.")
