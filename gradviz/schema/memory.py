"""What the saved-bytes measurement and the fused conv-BN study found, as plain data.

``gradviz.core.memory`` fills these; the CLI prints their ``to_dict()``, the worker sends it and the
app's memory panel reads it. ``from_dict`` reads the dict back. Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gradviz.schema.strict_json import decode, encode, stored, stored_if_there

__all__ = [
    "TENSOR_COLUMNS",
    "Comparison",
    "ConvBNStudy",
    "SavedBytes",
    "SavedTensor",
    "SweepRow",
    "VariantMemory",
    "tensor_rows",
]


@dataclass
class SavedTensor:
    """One tensor autograd kept: what it is, which graph node kept it, its shape and dtype, and the
    bytes of the storage it lives in.

    Tensors that live in one storage are charged once: the first one seen carries the bytes
    (``shared`` False), every later one has ``shared`` True and the same ``storage`` number, so
    the bytes of the entries with ``shared`` False add up to the variant's ``saved_bytes``.
    """

    shape: tuple[int, ...]
    dtype: str
    bytes: int  # the whole storage, not just this (possibly view) tensor
    shared: bool  # its storage was already counted for an earlier tensor
    name: str = ""  # what it is: "x (the input)", "conv 2 weight", "output of convolution #1"
    op: str = ""  # the graph node that saved it ("ConvolutionBackward0"); "" where unknown
    op_number: int = 0  # 2: the forward's second node of that name; 0 where unknown
    attribute: str = ""  # where that node keeps it: "input", "result1", "saved_tensors[0]", "ctx.sum"
    storage: int = -1  # which storage, numbered in order of first sight; -1 where unknown

    @property
    def saved_by(self) -> str:
        """``ConvolutionBackward0 #1 · input``, or '' where the node is unknown."""
        if not self.op:
            return ""
        where = f" · {self.attribute}" if self.attribute else ""
        return f"{self.op} #{self.op_number}{where}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "bytes": self.bytes,
            "shared": self.shared,
            "name": self.name,
            "op": self.op,
            "op_number": self.op_number,
            "attribute": self.attribute,
            "storage": self.storage,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SavedTensor:
        """Also reads an entry written before tensors were named (then name, op, attribute are '')."""
        return cls(
            tuple(d["shape"]),
            d["dtype"],
            d["bytes"],
            d["shared"],
            d.get("name", ""),
            d.get("op", ""),
            d.get("op_number", 0),
            d.get("attribute", ""),
            d.get("storage", -1),
        )


@dataclass
class SavedBytes:
    """Bytes saved for backward by one forward."""

    saved_bytes: int  # unique storages seen by the pack hook
    count: int  # how many unique storages
    tensors: list[SavedTensor]  # one entry per pack-hook call, in order
    ctx_attribute_bytes: int = 0  # tensors stored as attributes on custom Functions' ctx
    ctx_tensors: list[SavedTensor] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "saved_bytes": self.saved_bytes,
            "count": self.count,
            "tensors": [t.to_dict() for t in self.tensors],
            "ctx_attribute_bytes": self.ctx_attribute_bytes,
            "ctx_tensors": [t.to_dict() for t in self.ctx_tensors],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SavedBytes:
        """Also reads a VariantMemory dict written without the ctx keys (those are then 0 and [])."""
        return cls(
            d["saved_bytes"],
            d["count"],
            [SavedTensor.from_dict(t) for t in d["tensors"]],
            d.get("ctx_attribute_bytes", 0),
            [SavedTensor.from_dict(t) for t in d.get("ctx_tensors", [])],
        )


@dataclass
class Comparison:
    """Fused against one other computation, normwise: max|fused - other| <= rtol * max|other|."""

    against: str  # "unfused" (nn.Conv2d + nn.BatchNorm2d) or "reference" (same formula, plain ops)
    what: str  # "output", "input gradient", "weight gradients"
    max_difference: float
    scale: float  # max|other|
    rtol: float
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "against": self.against,
            "what": self.what,
            "max_difference": encode(self.max_difference),
            "scale": encode(self.scale),
            "rtol": self.rtol,
            "passed": self.passed,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Comparison:
        return cls(
            d["against"], d["what"], decode(d["max_difference"]), decode(d["scale"]), d["rtol"], d["passed"]
        )


@dataclass
class VariantMemory:
    saved: SavedBytes
    peak_bytes: int | None = None  # CUDA only: max_memory_allocated over forward+backward, above the start
    end_of_forward_bytes: int | None = None  # CUDA only: memory_allocated after forward, above the start

    # What a front-end reads of a variant, without reaching through ``saved``:
    @property
    def saved_bytes(self) -> int:
        return self.saved.saved_bytes

    @property
    def count(self) -> int:
        return self.saved.count

    @property
    def tensors(self) -> list[SavedTensor]:
        return self.saved.tensors

    @property
    def ctx_attribute_bytes(self) -> int:
        return self.saved.ctx_attribute_bytes

    @property
    def ctx_tensors(self) -> list[SavedTensor]:
        return self.saved.ctx_tensors

    @property
    def on_cuda(self) -> bool:
        """CUDA's allocator was read: ``peak_bytes`` and ``end_of_forward_bytes`` are set."""
        return self.peak_bytes is not None

    def to_dict(self, *, ctx: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"saved_bytes": self.saved.saved_bytes, "count": self.saved.count}
        if ctx:
            out["ctx_attribute_bytes"] = self.saved.ctx_attribute_bytes
        out["tensors"] = [t.to_dict() for t in self.saved.tensors]
        if ctx:
            out["ctx_tensors"] = [t.to_dict() for t in self.saved.ctx_tensors]
        if self.peak_bytes is not None:
            out["peak_bytes"] = self.peak_bytes
            out["end_of_forward_bytes"] = self.end_of_forward_bytes
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VariantMemory:
        """Extra keys (the fused variant's checks) are ConvBNStudy's and are skipped here."""
        return cls(SavedBytes.from_dict(d), d.get("peak_bytes"), d.get("end_of_forward_bytes"))


@dataclass
class ConvBNStudy:
    """Unfused vs fused conv-BN stack: saved bytes, the formula, and whether the answers agree.

    ``outputs_match`` / ``grads_match`` are True when fused agrees with BOTH the formula-exact
    reference (tight, rounding only) and nn.BatchNorm2d (within ``nn_rtol``); the per-check
    numbers are in ``comparisons``. See ``gradviz.core.memory.compare_with_unfused`` for why
    there are two.
    """

    device: str
    dtype: str | None  # None only when read from a dict: to_dict does not write it
    layers: int
    shape: tuple[int, int, int, int]
    out_channels: int | None  # None only when read from a dict: to_dict does not write it
    kernel: int | None  # None only when read from a dict: to_dict does not write it
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
    def variants(self) -> dict[str, VariantMemory]:
        """``{"unfused": ..., "fused": ...}`` in that order, as ``to_dict()["variants"]``."""
        return {"unfused": self.unfused, "fused": self.fused}

    @property
    def tensor_dtype(self) -> str | None:
        """The dtype the study ran in: ``dtype``, else (read from a dict) its first saved tensor's."""
        if self.dtype is not None:
            return self.dtype
        return self.unfused.tensors[0].dtype if self.unfused.tensors else None

    @property
    def max_output_difference(self) -> float:
        """max|fused - unfused| over the output elements."""
        return next(
            (c.max_difference for c in self.comparisons if c.against == "unfused" and c.what == "output"),
            math.nan,
        )

    def to_dict(self) -> dict[str, Any]:
        fused = self.fused.to_dict(ctx=True)
        fused["max_output_difference"] = encode(self.max_output_difference) if self.comparisons else None
        fused["formula_gap"] = encode(self.formula_gap)
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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConvBNStudy:
        """The study ``to_dict`` wrote. That dict has no dtype, out_channels or kernel: read from
        one, they are None (and taken from the dict if a later writer adds them)."""
        fused = d["variants"]["fused"]
        return cls(
            **stored(d, "device", "layers", "saved_difference_bytes", "formula_bytes", "outputs_match", "grads_match"),
            **stored_if_there(d, "dtype", "out_channels", "kernel"),
            shape=tuple(d["shape"]),
            unfused=VariantMemory.from_dict(d["variants"]["unfused"]),
            fused=VariantMemory.from_dict(fused),
            comparisons=[Comparison.from_dict(c) for c in fused["checks"]],
            nn_rtol=dict(fused["nn_rtol"]),
            reference_rtol=fused["reference_rtol"],
            formula_gap=decode(fused["formula_gap"]),
        )


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

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SweepRow:
        return cls(**d)


# --------------------------------------------------------------------------- the saved-tensor table

TENSOR_COLUMNS = ("tensor", "bytes", "shape", "dtype", "saved by")  # what and how much first: a narrow dock shows those


def tensor_rows(variant: VariantMemory) -> list[tuple[str, str, str, str, str]]:
    """One row of text per saved tensor of a variant, the ctx attributes after the saved tensors;
    the CLI's table and the memory panel's list. A dict is read with ``VariantMemory.from_dict``
    first, where it arrives, so the rows come from the typed study only.

    A tensor whose storage an earlier row already counted says so in its bytes column and is
    not charged again, so the bytes a reader adds up are the variant's total.
    """
    from gradviz.schema.units import format_bytes

    rows = []
    for t in [*variant.tensors, *variant.ctx_tensors]:
        size = f"{format_bytes(t.bytes)}" if not t.shared else f"shared (storage {t.storage}, counted once)"
        shape = "x".join(str(s) for s in t.shape) or "scalar"
        rows.append((t.name or "?", size, shape, t.dtype, t.saved_by or "?"))
    return rows


# --------------------------------------------------------------------------- what a study needs


def study_bytes(
    layers: int, shape: tuple[int, int, int, int], out_channels: int, kernel: int, dtype: str, device: str = "cpu"
) -> int:
    """A lower bound of the host memory one conv-BN study holds at once, known before anything
    is allocated, so a size that cannot fit is refused instead of ending in the OOM killer.

    With X = N*C*H*W input elements, A_k = N*C_out*H_k*W_k the k-th conv output (H_k = H - k(K-1))
    and s the dtype's item size: the input is drawn in float64 (8X) and kept in the dtype (sX),
    and one variant's forward saves its input and, per layer, the conv and batch-norm outputs
    (2 s sum A_k); the gradient drawn for the last output is another 8 A_L. On CUDA only the
    float64 draws live in host memory.
    """
    n, c, h, w = shape
    s = 8 if dtype == "float64" else 4
    trim = max(kernel - 1, 0)
    sizes = [n * out_channels * max(h - k * trim, 1) * max(w - k * trim, 1) for k in range(1, max(layers, 1) + 1)]
    x = n * c * h * w
    draws = 8 * (x + sizes[-1])
    if device != "cpu":
        return draws
    return draws + s * (x + 2 * sum(sizes))


def check_study_fits(
    layers: int,
    shape: tuple[int, int, int, int],
    out_channels: int,
    kernel: int,
    dtype: str,
    device: str,
    limit: int,
) -> None:
    """SettingsError, one sentence, when ``study_bytes`` exceeds ``limit`` (bytes; 0: no limit)."""
    from gradviz.schema.errors import SettingsError
    from gradviz.schema.units import format_bytes

    need = study_bytes(layers, shape, out_channels, kernel, dtype, device)
    if limit and need > limit:
        size = "x".join(str(v) for v in shape)
        raise SettingsError(
            f"The memory study of {layers} layer(s) on a {size} input with {out_channels} output channels "
            f"needs at least {format_bytes(min(need, 2**80))}, more than the {format_bytes(limit)} a run may use; use "
            "fewer output channels or layers, or a smaller input."
        )
