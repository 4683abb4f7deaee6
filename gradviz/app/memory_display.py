"""The memory study made ready to draw: one byte unit for both plots, the texts, the sweep's curves.

Plain Python and NumPy (no Qt), so it is tested on its own; the memory panel only hands the
results to pyqtgraph and Qt. The worker's "memory" payload is a dict; ``read_memory`` reads it
once, where it arrives (the run controller), into the typed ``MemoryResult`` everything after takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gradviz.schema.errors import GradvizError
from gradviz.schema.memory import ConvBNStudy, SweepRow, VariantMemory
from gradviz.schema.units import format_bytes

VARIANTS = ("unfused", "fused")
VARIANT_NAMES = {"unfused": "Conv2d + BatchNorm2d", "fused": "FusedConvBN2DFunction"}
PASS_COLOUR, FAIL_COLOUR = "#1a7f37", "#c62828"


@dataclass(frozen=True)
class MemoryResult:
    """One memory measurement as the panel draws it: the study and the sweep over layers and batch."""

    study: ConvBNStudy
    sweep: list[SweepRow]


def read_memory(payload: dict[str, Any]) -> tuple[MemoryResult | None, str | None]:
    """The worker's {"study", "sweep"} dict as the typed ``MemoryResult``, read once here; a study
    that cannot be read is an error the panel shows (the second item), never a crash."""
    try:
        study = ConvBNStudy.from_dict(payload["study"])
        sweep = [SweepRow.from_dict(row) for row in payload.get("sweep") or []]
    except (KeyError, TypeError, ValueError, GradvizError) as exc:
        return None, f"The memory study could not be read: {exc!r}"
    return MemoryResult(study, sweep), None


def saved_in_row(row: SweepRow, variant: str) -> int:
    """The bytes ``variant`` ("unfused" or "fused") saved in one row of the sweep."""
    return row.unfused_saved_bytes if variant == "unfused" else row.fused_saved_bytes


def bar_top(study: ConvBNStudy) -> int:
    """The taller bar in bytes (the fused one with its ctx attributes): it picks the unit."""
    unfused, fused = study.unfused, study.fused
    return max(unfused.saved_bytes, fused.saved_bytes + fused.ctx_attribute_bytes)


def headline(study: ConvBNStudy, unit: tuple[str, int]) -> str:
    """``fused saves 1.15 MiB (33.3 %)``."""
    unfused = study.unfused.saved_bytes
    difference = study.saved_difference_bytes
    percent = 100.0 * difference / unfused if unfused else 0.0
    verb = "saves" if difference >= 0 else "costs"
    return f"fused {verb} {format_bytes(abs(difference), unit, three_figures=True)} ({abs(percent):.1f} %)"


def checks_html(study: ConvBNStudy) -> str:
    """The measured difference against the formula, both variants' agreement, and what was measured."""
    difference, formula = study.saved_difference_bytes, study.formula_bytes
    n, c, h, w = study.shape
    dtype = f", {study.tensor_dtype}" if study.tensor_dtype is not None else ""
    return (
        f"difference = formula {_mark(difference == formula)} &nbsp;({difference:,} B measured, {formula:,} B by formula)"
        f" &nbsp;&nbsp; outputs match {_mark(bool(study.outputs_match))}"
        f" &nbsp; gradients match {_mark(bool(study.grads_match))}<br>"
        f'<span style="color:#555">{study.layers} layers, input {n}x{c}x{h}x{w}'
        f"{dtype} on {study.device}</span>"
    )


def _mark(ok: bool) -> str:
    colour = PASS_COLOUR if ok else FAIL_COLOUR
    return f'<span style="color:{colour}; font-weight:bold">{"✓" if ok else "✗"}</span>'


def sweep_curves(sweep: list[SweepRow], size: int) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(variant, batch) -> (layers, saved bytes / size), variant by variant so a legend reads as a table."""
    batches = sorted({row.batch for row in sweep})
    curves = {}
    for variant in VARIANTS:
        for batch in batches:
            rows = sorted((r for r in sweep if r.batch == batch), key=lambda r: r.layers)
            x = np.array([r.layers for r in rows], dtype=float)
            curves[(variant, batch)] = x, np.array([saved_in_row(r, variant) for r in rows], dtype=float) / size
    return curves


def measured_points(study: ConvBNStudy, sweep: list[SweepRow], size: int) -> tuple[list[float], list[float]]:
    """The sweep's points that are the bars (the study's layers and batch), both variants."""
    here = [r for r in sweep if r.layers == study.layers and r.batch == study.shape[0]]
    return [study.layers] * 2 * len(here), [saved_in_row(r, v) / size for r in here for v in VARIANTS]


def node_summary(variant: VariantMemory) -> list[tuple[str, int, int, int]]:
    """(node kind, how many nodes of it, tensors they saved, bytes charged to them) per kind of
    node that saved something, in order of first appearance; shared storages are charged once,
    to the first tensor seen in them, as the totals are."""
    kinds: dict[str, list] = {}
    for t in variant.tensors:
        entry = kinds.setdefault(t.op or "?", [set(), 0, 0])
        entry[0].add(t.op_number)
        entry[1] += 1
        entry[2] += 0 if t.shared else t.bytes
    return [(op, len(nodes), count, nbytes) for op, (nodes, count, nbytes) in kinds.items()]


def variant_title(name: str, variant: VariantMemory, unit: tuple[str, int]) -> str:
    """``unfused (Conv2d + BatchNorm2d): 15 tensors, 1.95 MiB``, the ctx attributes after a +."""
    text = f"{name} ({VARIANT_NAMES[name]}): {variant.count} tensors, {format_bytes(variant.saved_bytes, unit, three_figures=True)}"
    ctx = variant.ctx_tensors
    if ctx:
        text += f" + {len(ctx)} on ctx, {format_bytes(variant.ctx_attribute_bytes)}"
    shared = sum(1 for t in variant.tensors if t.shared)
    if shared:
        text += f" ({shared} share{'s' if shared == 1 else ''} a storage counted once)"
    return text


def why_text(study: ConvBNStudy, unit: tuple[str, int]) -> str:
    """What each variant's graph nodes keep, kind by kind: the reason one saves more.

    ``unfused: ConvolutionBackward0 ×3 keep 6 tensors (…), NativeBatchNormBackward0 ×3 keep 9
    (…) · fused: FusedConvBN2DFunctionBackward ×3 keep 6 (…)``."""
    parts = []
    for name in VARIANTS:
        kinds = node_summary(study.variants[name])
        if not kinds:
            continue
        said = ", ".join(
            f"{op} ×{nodes} keep{'s' if nodes == 1 else ''} {count} tensor{'' if count == 1 else 's'} ({format_bytes(b, unit, three_figures=True)})"
            for op, nodes, count, b in kinds
        )
        parts.append(f"{name}: {said}")
    return " · ".join(parts)
