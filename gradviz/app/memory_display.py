"""The memory study made ready to draw: one byte unit for both plots, the texts, the sweep's curves.

Plain Python and NumPy from the worker's "memory" payload (no Qt), so it is tested on its own;
the memory panel only hands the results to pyqtgraph and Qt.
"""

from __future__ import annotations

import numpy as np

from gradviz.schema.units import format_bytes

VARIANTS = ("unfused", "fused")
VARIANT_NAMES = {"unfused": "Conv2d + BatchNorm2d", "fused": "FusedConvBN2DFunction"}
PASS_COLOUR, FAIL_COLOUR = "#1a7f37", "#c62828"


def bar_top(study: dict) -> int:
    """The taller bar in bytes (the fused one with its ctx attributes): it picks the unit."""
    unfused, fused = study["variants"]["unfused"], study["variants"]["fused"]
    return max(unfused["saved_bytes"], fused["saved_bytes"] + fused.get("ctx_attribute_bytes", 0))


def headline(study: dict, unit: tuple[str, int]) -> str:
    """``fused saves 1.15 MiB (33.3 %)``."""
    unfused = study["variants"]["unfused"]["saved_bytes"]
    difference = study["saved_difference_bytes"]
    percent = 100.0 * difference / unfused if unfused else 0.0
    verb = "saves" if difference >= 0 else "costs"
    return f"fused {verb} {format_bytes(abs(difference), unit, three_figures=True)} ({abs(percent):.1f} %)"


def checks_html(study: dict) -> str:
    """The measured difference against the formula, both variants' agreement, and what was measured."""
    difference, formula = study["saved_difference_bytes"], study["formula_bytes"]
    n, c, h, w = study["shape"]
    tensors = study["variants"]["unfused"].get("tensors") or [{}]
    dtype = f", {tensors[0]['dtype']}" if "dtype" in tensors[0] else ""
    return (
        f"difference = formula {_mark(difference == formula)} &nbsp;({difference:,} B measured, {formula:,} B by formula)"
        f" &nbsp;&nbsp; outputs match {_mark(bool(study['outputs_match']))}"
        f" &nbsp; gradients match {_mark(bool(study['grads_match']))}<br>"
        f'<span style="color:#555">{study["layers"]} layers, input {n}x{c}x{h}x{w}'
        f"{dtype} on {study['device']}</span>"
    )


def _mark(ok: bool) -> str:
    colour = PASS_COLOUR if ok else FAIL_COLOUR
    return f'<span style="color:{colour}; font-weight:bold">{"✓" if ok else "✗"}</span>'


def sweep_curves(sweep: list[dict], size: int) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(variant, batch) -> (layers, saved bytes / size), variant by variant so a legend reads as a table."""
    batches = sorted({row["batch"] for row in sweep})
    curves = {}
    for variant in VARIANTS:
        for batch in batches:
            rows = sorted((r for r in sweep if r["batch"] == batch), key=lambda r: r["layers"])
            x = np.array([r["layers"] for r in rows], dtype=float)
            curves[(variant, batch)] = x, np.array([r[f"{variant}_saved_bytes"] for r in rows], dtype=float) / size
    return curves


def measured_points(study: dict, sweep: list[dict], size: int) -> tuple[list[float], list[float]]:
    """The sweep's points that are the bars (the study's layers and batch), both variants."""
    here = [r for r in sweep if r["layers"] == study["layers"] and r["batch"] == study["shape"][0]]
    return [study["layers"]] * 2 * len(here), [r[f"{v}_saved_bytes"] / size for r in here for v in VARIANTS]


def node_summary(variant: dict) -> list[tuple[str, int, int, int]]:
    """(node kind, how many nodes of it, tensors they saved, bytes charged to them) per kind of
    node that saved something, in order of first appearance; shared storages are charged once,
    to the first tensor seen in them, as the totals are."""
    kinds: dict[str, list] = {}
    for t in variant.get("tensors", []):
        entry = kinds.setdefault(t.get("op") or "?", [set(), 0, 0])
        entry[0].add(t.get("op_number", 0))
        entry[1] += 1
        entry[2] += 0 if t["shared"] else t["bytes"]
    return [(op, len(nodes), count, nbytes) for op, (nodes, count, nbytes) in kinds.items()]


def variant_title(name: str, variant: dict, unit: tuple[str, int]) -> str:
    """``unfused (Conv2d + BatchNorm2d): 15 tensors, 1.95 MiB``, the ctx attributes after a +."""
    text = f"{name} ({VARIANT_NAMES[name]}): {variant['count']} tensors, {format_bytes(variant['saved_bytes'], unit, three_figures=True)}"
    ctx = variant.get("ctx_tensors") or []
    if ctx:
        text += f" + {len(ctx)} on ctx, {format_bytes(variant.get('ctx_attribute_bytes', 0))}"
    shared = sum(1 for t in variant.get("tensors", []) if t["shared"])
    if shared:
        text += f" ({shared} share{'s' if shared == 1 else ''} a storage counted once)"
    return text


def why_text(study: dict, unit: tuple[str, int]) -> str:
    """What each variant's graph nodes keep, kind by kind: the reason one saves more.

    ``unfused: ConvolutionBackward0 ×3 keep 6 tensors (…), NativeBatchNormBackward0 ×3 keep 9
    (…) · fused: FusedConvBN2DFunctionBackward ×3 keep 6 (…)``."""
    parts = []
    for name in VARIANTS:
        kinds = node_summary(study["variants"][name])
        if not kinds:
            continue
        said = ", ".join(
            f"{op} ×{nodes} keep{'s' if nodes == 1 else ''} {count} tensor{'' if count == 1 else 's'} ({format_bytes(b, unit, three_figures=True)})"
            for op, nodes, count, b in kinds
        )
        parts.append(f"{name}: {said}")
    return " · ".join(parts)
