"""What autograd keeps for backward, and the fused conv-BN study built on it.

``saved_bytes`` runs one forward under ``torch.autograd.graph.saved_tensors_hooks`` and adds up
the storages the pack hook sees, each storage once. Tensors a custom Function keeps as ``ctx``
attributes (``ctx.sum = ...``) never reach the pack hook; they are found by walking the output's
graph and are reported separately.

``conv_bn_study`` measures the seed tutorial's claim: a stack of Conv2d + BatchNorm2d layers
against the same stack of ``FusedConvBN2DFunction`` (the built-in library file, loaded through the
product loader), with the same weights. It checks the measured difference against
``expected_saved_difference`` and checks that the saving does not change the answer.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache

import torch
import torch.nn.functional as F
from torch import nn

from gradviz.schema.errors import SettingsError

EPS = 1e-3  # the tutorial's batch-norm eps, used by both variants
DTYPES = {"float32": torch.float32, "float64": torch.float64}
# Fused vs. the same formula written with plain autograd ops: only rounding differs, and it
# compounds layer by layer. Normwise: max|a - b| <= layers * rtol * max|b|.
REFERENCE_RTOL = {torch.float32: 1e-4, torch.float64: 1e-11}


# --------------------------------------------------------------------------- saved bytes


@dataclass
class SavedTensor:
    """One tensor autograd kept: its shape and dtype, and the bytes of the storage it lives in."""

    shape: tuple[int, ...]
    dtype: str
    bytes: int  # the whole storage, not just this (possibly view) tensor
    shared: bool  # its storage was already counted for an earlier tensor

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "bytes": self.bytes, "shared": self.shared}


@dataclass
class SavedBytes:
    """Bytes saved for backward by one forward."""

    saved_bytes: int  # unique storages seen by the pack hook
    count: int  # how many unique storages
    tensors: list[SavedTensor]  # one entry per pack-hook call, in order
    ctx_attribute_bytes: int = 0  # tensors stored as attributes on custom Functions' ctx
    ctx_tensors: list[SavedTensor] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "saved_bytes": self.saved_bytes,
            "count": self.count,
            "tensors": [t.to_dict() for t in self.tensors],
            "ctx_attribute_bytes": self.ctx_attribute_bytes,
            "ctx_tensors": [t.to_dict() for t in self.ctx_tensors],
        }


def saved_bytes(fn_or_callable: Callable | type[torch.autograd.Function], inputs) -> SavedBytes:
    """Bytes saved for backward when ``fn_or_callable(*inputs)`` runs once.

    A ``torch.autograd.Function`` subclass is called through ``.apply``; anything else is called
    as is (an ``nn.Module``, a lambda). ``inputs`` is a tuple of arguments (a lone tensor is fine).
    """
    return _measure_saved(fn_or_callable, inputs)[0]


def _measure_saved(fn_or_callable, inputs) -> tuple[SavedBytes, object]:
    """saved_bytes, and the forward's output so the caller can run backward on it."""
    fn = _as_callable(fn_or_callable)
    args = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    packed: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        # Keep a reference so no saved storage is freed (and its address reused) mid-forward;
        # detach so the hook holds no graph and makes no reference cycle through grad_fn.
        packed.append(t.detach())
        return packed[-1]

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = fn(*args)

    counted: set[tuple[str, int]] = set()
    tensors = []
    for t in packed:
        key = _storage_key(t)
        tensors.append(_describe(t, shared=key in counted))
        counted.add(key)
    total = sum(t.bytes for t in tensors if not t.shared)

    stop = {id(a.grad_fn) for a in args if isinstance(a, torch.Tensor) and a.grad_fn is not None}
    ctx_tensors = []
    for t in _ctx_attribute_tensors(_tensors_in(output), stop):
        key = _storage_key(t)
        if key not in counted:
            counted.add(key)
            ctx_tensors.append(_describe(t, shared=False))
    result = SavedBytes(
        saved_bytes=total,
        count=sum(not t.shared for t in tensors),
        tensors=tensors,
        ctx_attribute_bytes=sum(t.bytes for t in ctx_tensors),
        ctx_tensors=ctx_tensors,
    )
    return result, output


def _as_callable(fn_or_callable) -> Callable:
    if isinstance(fn_or_callable, type) and issubclass(fn_or_callable, torch.autograd.Function):
        return fn_or_callable.apply
    if not callable(fn_or_callable):
        raise SettingsError(f"saved_bytes needs a Function subclass or a callable, got {fn_or_callable!r}.")
    return fn_or_callable


def _storage_key(t: torch.Tensor) -> tuple[str, int]:
    return str(t.device), t.untyped_storage().data_ptr()


def _describe(t: torch.Tensor, *, shared: bool) -> SavedTensor:
    return SavedTensor(
        tuple(t.shape), str(t.dtype).removeprefix("torch."), t.untyped_storage().nbytes(), shared
    )


def _tensors_in(value) -> list[torch.Tensor]:
    """Tensors in a value, a list/tuple of values, or a dict's values (one level)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _ctx_attribute_tensors(outputs: Iterable[torch.Tensor], stop: set[int]) -> list[torch.Tensor]:
    """Tensors held as attributes of custom Function nodes reachable from ``outputs``.

    A custom Function's graph node is its ctx, so ``ctx.sum = ...`` lands in the node's
    ``__dict__``. The walk stops at the inputs' own grad_fns: that history is not this forward's.
    """
    found: list[torch.Tensor] = []
    todo = [t.grad_fn for t in outputs if t.grad_fn is not None]
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen or id(node) in stop:
            continue
        seen.add(id(node))
        if isinstance(node, torch.autograd.function.BackwardCFunction):
            for value in vars(node).values():
                found.extend(_tensors_in(value))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return found


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


@dataclass
class Comparison:
    """Fused against one other computation, normwise: max|fused - other| <= rtol * max|other|."""

    against: str  # "unfused" (nn.Conv2d + nn.BatchNorm2d) or "reference" (same formula, plain ops)
    what: str  # "output", "input gradient", "weight gradients"
    max_difference: float
    scale: float  # max|other|
    rtol: float
    passed: bool

    def to_dict(self) -> dict:
        return {
            "against": self.against,
            "what": self.what,
            "max_difference": _finite(self.max_difference),
            "scale": _finite(self.scale),
            "rtol": self.rtol,
            "passed": self.passed,
        }


@dataclass
class VariantMemory:
    saved: SavedBytes
    peak_bytes: int | None = None  # CUDA only: max_memory_allocated over forward+backward, above the start
    end_of_forward_bytes: int | None = None  # CUDA only: memory_allocated after forward, above the start

    def to_dict(self, *, ctx: bool) -> dict:
        out = {"saved_bytes": self.saved.saved_bytes, "count": self.saved.count}
        if ctx:
            out["ctx_attribute_bytes"] = self.saved.ctx_attribute_bytes
        out["tensors"] = [t.to_dict() for t in self.saved.tensors]
        if ctx:
            out["ctx_tensors"] = [t.to_dict() for t in self.saved.ctx_tensors]
        if self.peak_bytes is not None:
            out["peak_bytes"] = self.peak_bytes
            out["end_of_forward_bytes"] = self.end_of_forward_bytes
        return out


@dataclass
class ConvBNStudy:
    """Unfused vs fused conv-BN stack: saved bytes, the formula, and whether the answers agree.

    ``outputs_match`` / ``grads_match`` are True when fused agrees with BOTH the formula-exact
    reference (tight, rounding only) and nn.BatchNorm2d (within ``nn_rtol``); the per-check
    numbers are in ``comparisons``. See ``compare_with_unfused`` for why there are two.
    """

    device: str
    dtype: str
    layers: int
    shape: tuple[int, int, int, int]
    out_channels: int
    kernel: int
    unfused: VariantMemory
    fused: VariantMemory
    saved_difference_bytes: int
    formula_bytes: int
    outputs_match: bool
    grads_match: bool
    comparisons: list[Comparison]
    nn_rtol: dict[str, float]  # tolerance for fused vs nn.BatchNorm2d, by what
    reference_rtol: float
    formula_gap: float  # sum over layers of max_c |r_kc - 1|, see compare_with_unfused

    @property
    def max_output_difference(self) -> float:
        """max|fused - unfused| over the output elements."""
        return next(
            (c.max_difference for c in self.comparisons if c.against == "unfused" and c.what == "output"),
            math.nan,
        )

    def to_dict(self) -> dict:
        fused = self.fused.to_dict(ctx=True)
        fused["max_output_difference"] = _finite(self.max_output_difference) if self.comparisons else None
        fused["formula_gap"] = _finite(self.formula_gap)
        fused["nn_rtol"] = dict(self.nn_rtol)
        fused["reference_rtol"] = self.reference_rtol
        fused["checks"] = [c.to_dict() for c in self.comparisons]
        return {
            "device": self.device,
            "layers": self.layers,
            "shape": list(self.shape),
            "variants": {"unfused": self.unfused.to_dict(ctx=False), "fused": fused},
            "saved_difference_bytes": self.saved_difference_bytes,
            "formula_bytes": self.formula_bytes,
            "outputs_match": self.outputs_match,
            "grads_match": self.grads_match,
        }


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


@dataclass
class SweepRow:
    layers: int
    batch: int
    unfused_saved_bytes: int
    fused_saved_bytes: int
    fused_ctx_attribute_bytes: int
    saved_difference_bytes: int
    formula_bytes: int
    unfused_peak_bytes: int | None = None
    fused_peak_bytes: int | None = None

    def to_dict(self) -> dict:
        return dict(vars(self))


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
    dev = _device(device)
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
        saved, out = _measure_saved(forward, (leaf,))
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
    grads = torch.autograd.grad(out, [leaf, *params], grad_out)
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


def _device(device: str | torch.device) -> torch.device:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise SettingsError(f"Unknown device {device!r}; use 'cpu', 'cuda' or 'cuda:N'.") from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise SettingsError(f"Device {device!r} is not supported here; use 'cpu', 'cuda' or 'cuda:N'.")
    if not torch.cuda.is_available():
        raise SettingsError(f"Device {device!r} asked for, but CUDA is not available; use device='cpu'.")
    index = 0 if dev.index is None else dev.index
    if index >= torch.cuda.device_count():
        raise SettingsError(
            f"Device {device!r} asked for, but only {torch.cuda.device_count()} CUDA device(s) exist."
        )
    return torch.device("cuda", index)


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in DTYPES:
        return DTYPES[dtype.removeprefix("torch.")]
    raise SettingsError(f"dtype must be 'float32' or 'float64'; got {dtype!r}.")


def _finite(value: float) -> float | None:
    """Strict JSON has no NaN or Infinity."""
    return value if math.isfinite(value) else None
