"""Plain-data views of a CheckResult: strict JSON for scripts, a compact table for people."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gradviz.schema.array_files import block_key, write_npy
from gradviz.schema.graph import GraphModel
from gradviz.schema.indices import cell_label
from gradviz.schema.results import (
    FAST_MODE,
    NOT_THE_VERDICT,
    WARNED,
    BlockComparison,
    CheckResult,
    LargeBlock,
)
from gradviz.schema.strict_json import encode, encode_optional
from gradviz.schema.sweep import BlockSweep, SweepResult


def result_to_dict(result: CheckResult) -> dict[str, Any]:
    """The ``gradviz check --json`` object."""
    return {
        "function": result.function,
        "device": result.device,
        "dtype": result.dtype,
        "passed": result.passed,
        "inputs": [
            {
                "index": t.index,
                "name": t.name,
                "shape": _shape(t.shape),
                "dtype": t.dtype,
                "requires_grad": t.requires_grad,
            }
            for t in result.inputs
        ],
        "outputs": [
            {"index": t.index, "shape": _shape(t.shape), "dtype": t.dtype, "differentiable": t.requires_grad}
            for t in result.outputs
        ],
        "blocks": [_block_dict(result, b) for b in result.blocks],
        "forward_blocks": [_block_dict(result, b, forward=True) for b in result.forward_blocks],
        "large_blocks": [_large_block_dict(result, b) for b in result.large_blocks],
        "deferred_maps": result.deferred_maps,
        "checks": [c.to_dict() for c in result.checks],
        "warnings": result.warnings,
        "notes": result.notes,
        "paths": {"analytic": result.analytic_path, "numerical": result.numerical_path},
        "tolerance": {"eps": result.settings.eps, "atol": result.settings.atol, "rtol": result.settings.rtol},
        "settings": result.settings.to_dict(),
        "functions": result.functions,
        "seconds": {k: round(v, 6) for k, v in result.seconds.items()},
        "precision": result.precision.to_dict() if result.precision else None,
        "sweep": result.sweep.to_dict() if result.sweep else None,
    }


def _block_dict(result: CheckResult, b: BlockComparison, *, forward: bool = False) -> dict[str, Any]:
    """One entry of "blocks" or "forward_blocks" (there ``analytic`` is the forward-mode Jacobian)."""
    return {
        "output": b.output,
        "input": b.input,
        "rows": b.shape[0],
        "cols": b.shape[1],
        "max_abs_error": encode(b.max_abs_error),
        "failing": b.n_failing,
        "nonfinite": b.n_nonfinite,
        "worst": list(b.worst) if b.worst else None,
        "worst_cell": result.cell_label(b, *b.worst) if b.worst else None,
        "hints": b.hints,
        "kinks": b.n_kinks,
        "kink_cells": _kink_cells(result, b),
        "sweep": None if forward else _block_sweep_summary(result, b),
    }


MAX_LISTED_KINKS = 8


def _kink_cells(result: CheckResult, block: BlockComparison) -> list[str]:
    """Labels of the first few cells marked as kinks (non-differentiable here)."""
    if block.kinks is None:
        return []
    rows, cols = np.nonzero(block.kinks)
    return [result.cell_label(block, int(r), int(c)) for r, c in list(zip(rows, cols))[:MAX_LISTED_KINKS]]


def _block_sweep_summary(result: CheckResult, block: BlockComparison) -> dict[str, Any] | None:
    """The sweep's slopes and verdict for one block, beside its cells (the whole sweep is under "sweep")."""
    found = result.sweep.block(block.output, block.input) if result.sweep else None
    if found is None:
        return None
    return {
        "remainder_slope": encode_optional(found.remainder_slope),
        "curvature_slope": encode_optional(found.curvature_slope),
        "truncation_slope": encode_optional(found.truncation_slope),
        "roundoff_slope": encode_optional(found.roundoff_slope),
        "best_eps": encode_optional(found.best_eps),
        "verdict": str(found.verdict),
        "message": found.message,
    }


def _large_block_dict(result: CheckResult, block: LargeBlock) -> dict[str, Any]:
    return {
        "output": block.output,
        "input": block.input,
        "out_shape": list(block.out_shape),
        "in_shape": list(block.in_shape),
        "rows": block.shape[0],
        "cols": block.shape[1],
        "probes": block.probes,
        "complete": block.complete,
        "failing_cells": [
            {
                "row": c.row,
                "col": c.col,
                "cell": result.cell_label(block, c.row, c.col),
                "analytic": encode(c.analytic),
                "numerical": encode(c.numerical),
            }
            for c in block.cells
        ],
    }


def _shape(shape: tuple[int, ...] | None) -> list[int] | None:
    return None if shape is None else list(shape)


def format_table(result: CheckResult) -> str:
    """One line per block plus the worst cell of each failing block."""
    lines = [
        f"{result.function} on {result.device}, {result.dtype}  "
        f"(eps={result.settings.eps:g}, atol={result.settings.atol:g}, rtol={result.settings.rtol:g})",
        "",
        f"{'block':<24} {'shape':>12} {'max |a-n|':>11} {'failing':>9}  worst cell",
    ]
    if not result.settings.check_backward_ad and not result.blocks:  # forward mode alone decides
        lines[-1] = "backward mode not checked (check_backward_ad=False)"
    for b in result.blocks:
        name = f"out{b.output} / {result.inputs[b.input].name}"
        worst = ""
        if b.worst and not b.passed:
            r, c = b.worst
            out_idx, in_idx = b.cell_index(r, c)
            a, n = b.analytic[r, c], b.numerical[r, c]
            worst = (
                f"{cell_label(b.output, out_idx, result.inputs[b.input].name, in_idx)}"
                f"  analytic {a:.6g}, numerical {n:.6g}"
            )
        shape = f"{b.shape[0]}x{b.shape[1]}"
        lines.append(f"{name:<24} {shape:>12} {b.max_abs_error:>11.3g} {b.n_failing:>9}  {worst}")
        lines.extend(f"    hint: {h}" for h in b.hints)
        if b.n_kinks:
            listed = ", ".join(_kink_cells(result, b)[:3])
            lines.append(f"    kinks: {b.n_kinks} failing cell(s) non-differentiable here ({listed}{', ...' if b.n_kinks > 3 else ''})")
        found = result.sweep.block(b.output, b.input) if result.sweep else None
        if found is not None:
            lines.append(f"    sweep: {sweep_slopes(found)}: {found.verdict.headline}")
    for large in result.large_blocks:
        name = f"out{large.output} / {result.inputs[large.input].name}"
        shape = f"{large.shape[0]}x{large.shape[1]}"
        searched = "searched" if large.complete else "searched (stopped at its budget)"
        lines.append(f"{name:<24} {shape:>12} {searched:>21}  {len(large.cells)} failing cell(s) found")
        for cell in large.cells:
            lines.append(f"    {result.cell_label(large, cell.row, cell.col)}  analytic {cell.analytic:.6g}, numerical {cell.numerical:.6g}")
    lines += _forward_rows(result)
    lines.append("")
    width = max([26, *(len(c.name) for c in result.checks)])  # opcheck_autograd_registration is longer
    for outcome in result.checks:
        lines.append(f"{outcome.name:<{width}} {outcome.status:<7} {outcome.detail}")
    if result.checks:
        lines.append("")
    for w in result.warnings:
        lines.append(f"warning: {w}")
    if result.sweep is not None:
        lines.append(f"sweep: {result.sweep.verdict.headline}. {result.sweep.message}")
    for note in result.notes:
        lines.append(f"note: {note}")
    total = sum(b.n_failing for b in result.blocks) + sum(len(b.cells) for b in result.large_blocks)
    cells = sum(b.analytic.size for b in result.blocks) + sum(b.shape[0] * b.shape[1] for b in result.large_blocks)
    forward = sum(b.n_failing for b in result.forward_blocks)
    failed_checks = [c.name for c in result.checks if c.failed]
    if result.passed:
        verdict = "PASSED"
    elif total or forward:
        counts = [f"{total:,} of {cells:,} cells"] if total else []
        if forward:
            counts.append(f"{forward:,} of {sum(b.analytic.size for b in result.forward_blocks):,} forward-mode cells")
        verdict = f"FAILED: {' and '.join(counts)} outside tolerance"
    else:
        verdict = f"FAILED: {', '.join(failed_checks)}"
    lines.append(f"{verdict}{warned_note(result)}  ({result.seconds.get('total', 0.0):.3f} s)")
    return "\n".join(lines)


def warned_note(result: CheckResult) -> str:
    """``; warned (not part of gradcheck's verdict): opcheck_faketensor``: the checks beyond gradcheck
    that found a problem (a custom op's registration, a vmap rule), said beside the verdict they
    leave alone; '' when there are none."""
    warned = [c.name for c in result.checks if c.status == WARNED]
    return f"; warned ({NOT_THE_VERDICT}): {', '.join(warned)}" if warned else ""


def _forward_rows(result: CheckResult) -> list[str]:
    """The forward blocks (check_forward_ad): the forward-mode Jacobian against the numerical one."""
    if not result.forward_blocks:
        return []
    lines = [
        "",
        "forward mode (jvp / forward AD) against numerical:",
        f"{'block':<24} {'shape':>12} {'max |f-n|':>11} {'failing':>9}  worst cell",
    ]
    for b in result.forward_blocks:
        worst = ""
        if b.worst and not b.passed:
            r, c = b.worst
            worst = f"{result.cell_label(b, r, c)}  forward {b.analytic[r, c]:.6g}, numerical {b.numerical[r, c]:.6g}"
        shape = f"{b.shape[0]}x{b.shape[1]}"
        lines.append(f"{result.block_title(b):<24} {shape:>12} {b.max_abs_error:>11.3g} {b.n_failing:>9}  {worst}")
        lines.extend(f"    hint: {h}" for h in b.hints)
    return lines


def sweep_slopes(b: BlockSweep) -> str:
    """``remainder slope 1.00, curvature 2.00, best eps 1e-05``: a block's sweep in a few words."""

    def slope(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    best = f", best eps {b.best_eps:g}" if b.best_eps is not None else ""
    return f"remainder slope {slope(b.remainder_slope)}, curvature slope {slope(b.curvature_slope)}{best}"


def format_sweep(sweep: SweepResult) -> str:
    """``gradviz sweep``: per block, the curves against the step, the slopes and the verdict."""
    lines = [
        f"{sweep.function} on {sweep.device}, {sweep.dtype}  (check's eps={sweep.eps:g}, atol={sweep.atol:g}, "
        f"rtol={sweep.rtol:g}; {len(sweep.steps)} steps, {sweep.seconds:.2f} s, {sweep.path})",
    ]
    for b in [*sweep.blocks, sweep.overall]:
        lines += ["", f"{b.title}  ({b.shape[0]}x{b.shape[1]})"]
        header = f"  {'eps':>9} {'remainder':>11} {'curvature':>11}"
        if b.swept:
            header += f" {'max |n-a|':>11} {'/ bound':>9} {'failing':>8}"
            header += "".join(f"  {c.label[:28]:>28}" for c in b.cells)
        lines.append(header)
        for k, h in enumerate(sweep.steps):
            mark = "*" if k == sweep.eps_index else " "
            row = f" {mark}{h:>9.3g} {b.remainder[k]:>11.3g} {b.curvature[k]:>11.3g}"
            if b.errors is not None and b.ratios is not None and b.failing is not None:  # b.swept
                row += f" {b.errors[k]:>11.3g} {b.ratios[k]:>9.3g} {b.failing[k]:>8}"
                row += "".join(f"  {c.errors[k]:>28.3g}" for c in b.cells)
            lines.append(row)
        columns = f" ({b.columns} of {b.shape[1]} columns)" if b.swept and b.columns and b.columns < b.shape[1] else ""
        lines.append(f"  {sweep_slopes(b)}; round-off floor {b.floor:.2g}{columns}")
        lines.append(f"  {b.message}")
    lines.append("")
    lines += [f"note: {n}" for n in sweep.notes]
    best = f" Suggested eps: {sweep.best_eps:g}." if sweep.best_eps is not None else ""
    lines.append(f"{sweep.verdict.headline.upper()}: {sweep.message}{best}")
    return "\n".join(lines)


SAVED_ARRAYS = ("analytic", "numerical", "forward")  # what ``gradviz check --save`` writes per block


# every save that refuses to replace files says so in these words; ``how`` is the flag or keyword that would
ALREADY_HOLDS = (
    "{directory} already holds {files}; nothing was written. Pass {how} to replace them, or save into another folder."
)


class ExistingArrays(FileExistsError):
    """``save_blocks`` would replace files: the message names them; nothing was written."""


def save_blocks(result: CheckResult, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
    """``analytic_o{i}_i{j}.npy`` and ``numerical_o{i}_i{j}.npy`` (float64, rows x cols), and
    ``forward_o{i}_i{j}.npy`` (the forward-mode Jacobian) with check_forward_ad.

    Without ``overwrite`` a file of the same name is never replaced: ExistingArrays naming every
    one, before anything is written, and each file is created exclusively (``xb``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        directory / f"{kind}_{block_key(b)}.npy": array
        for b in result.blocks
        for kind, array in zip(SAVED_ARRAYS, (b.analytic, b.numerical))
    }
    for b in result.forward_blocks:  # the numerical Jacobian is the same; without backward mode, saved here
        paths[directory / f"forward_{block_key(b)}.npy"] = b.analytic
        paths.setdefault(directory / f"numerical_{block_key(b)}.npy", b.numerical)
    existing = [p.name for p in paths if p.exists() or p.is_symlink()]
    if existing and not overwrite:
        files = ", ".join(existing)
        raise ExistingArrays(ALREADY_HOLDS.format(directory=directory, files=files, how="--overwrite"))
    for path, array in paths.items():
        write_npy(path, np.ascontiguousarray(array, dtype=np.float64), exclusive=not overwrite)
    return list(paths)


def format_graph(graph: GraphModel) -> str:
    """The graph as text: one line per node (children by id), its saved tensors below it."""
    children: dict[int, list[int]] = {}
    for source, target in graph.edges.tolist():
        children.setdefault(source, []).append(target)
    lines = []
    for node in graph.nodes:
        label = node.name
        if node.kind == "custom" and node.class_name:
            label += f"  [custom Function {node.class_name}]"
        elif node.kind == "leaf" and node.input_name:
            label += f"  [leaf: {node.input_name}]"
        flags = f"  flags: {', '.join(node.flags)}" if node.flags else ""
        into = ", ".join(f"#{k}" for k in children.get(node.id, [])) or "-"
        lines.append(f"#{node.id:<3} {label}{flags}  -> {into}")
        for saved in node.saved:
            shape = "x".join(str(d) for d in saved.shape) or "scalar"
            share = ", shared storage" if saved.shared else ""
            lines.append(
                f"       saved {saved.name}: {shape} {saved.dtype}, {saved.bytes:,} B "
                f"({saved.via}, {saved.role}{share})"
            )
    order = " -> ".join(f"#{k}" for k in graph.backward_order)
    lines.append(f"backward order: {order}")
    lines.append(f"saved for backward: {graph.saved_bytes_unique:,} B (each storage once)")
    if graph.backward_error:
        lines.append(f"backward stopped: {graph.backward_error}")
    return "\n".join(lines)


def cell_readout(
    result: CheckResult, block: BlockComparison, row: int, col: int, *, offset: tuple[int, int] = (0, 0)
) -> str:
    """The hover line: where the cell comes from, both values, the error and the rule.

    ``offset``: where ``block``'s arrays start in the whole block (a region of a large one);
    ``row`` and ``col`` are always indices into the whole block."""
    r, c = row - offset[0], col - offset[1]
    # + 0.0 turns -0.0 into 0.0: "analytic -0" reads like a sign error
    a, n = float(block.analytic[r, c]) + 0.0, float(block.numerical[r, c]) + 0.0
    bound = result.settings.tolerance().bound(n)
    err = abs(a - n)
    verdict = f"fails: > {bound:.2g}" if block.failing[r, c] else f"ok: <= {bound:.2g}"
    kink = "; non-differentiable here (kink)" if block.kinks is not None and block.kinks[r, c] else ""
    return (
        f"{result.cell_label(block, row, col)}: analytic {a:.3g}, numerical {n:.3g}, |err| {err:.1e} ({verdict}{kink})"
    )


def verdict_line(result: CheckResult) -> str:
    """One line for a banner: the verdict, the worst cell or the failing checks, and the warned checks."""
    return _verdict_words(result) + warned_note(result)


def _verdict_words(result: CheckResult) -> str:
    if result.deferred_maps or (result.large_blocks and not result.blocks):
        return _large_verdict_line(result)
    forward_cells = sum(b.analytic.size for b in result.forward_blocks)
    outside = result.n_failing + sum(b.n_failing for b in result.forward_blocks)
    if result.passed and outside:  # fast_mode decided: its projections agree though some cells do not
        return (
            f"PASSED: {result.function} by gradcheck's fast_mode (random projections agree); "
            f"{outside:,} of {result.n_cells + forward_cells:,} cells outside tolerance"
        )
    if result.passed:
        also = f" and all {forward_cells:,} forward-mode cells" if result.forward_blocks else ""
        cells = f"all {result.n_cells:,} cells{also}" if result.blocks else f"all {forward_cells:,} forward-mode cells"
        return f"PASSED: {result.function}, {cells} within tolerance"
    failed_blocks = [b for b in result.blocks if not b.passed]
    failed_forward = [b for b in result.forward_blocks if not b.passed]
    if not failed_blocks and failed_forward:
        worst = max(failed_forward, key=lambda b: b.max_abs_error)
        where = result.cell_label(worst, *worst.worst) if worst.worst else ""
        failing = sum(b.n_failing for b in failed_forward)
        return (
            f"FAILED: {failing:,} of {forward_cells:,} forward-mode cells; worst {where} "
            f"(|err| {worst.max_abs_error:.2g})"
        )
    if not failed_blocks:
        return f"FAILED: {result.function}: {', '.join(c.name for c in result.checks if c.failed)}"
    worst = max(failed_blocks, key=lambda b: b.max_abs_error)
    where = result.cell_label(worst, *worst.worst) if worst.worst else ""
    return f"FAILED: {result.n_failing:,} of {result.n_cells:,} cells; worst {where} (|err| {worst.max_abs_error:.2g})"


def _large_verdict_line(result: CheckResult) -> str:
    """A check whose Jacobians were never held: gradcheck's verdict, and what the search found
    among how many cells (with fast_mode a found cell beside a passing verdict is a warning)."""
    cells = sum(b.shape[0] * b.shape[1] for b in result.large_blocks)
    found = [(b, c) for b in result.large_blocks for c in b.cells]
    failed = [c.name for c in result.checks if c.failed]
    searched = any(b.probes for b in result.large_blocks)
    how = "random projections, then bisection" if searched else "one more random projection"
    fast = any(c.name == FAST_MODE for c in result.checks)
    worst = ""
    if found:
        block, cell = max(found, key=lambda bc: abs(bc[1].analytic - bc[1].numerical))
        where = result.cell_label(block, cell.row, cell.col)
        worst = f"worst {where} (|err| {abs(cell.analytic - cell.numerical):.2g})"
    count = f"{len(found):,} wrong cell{'s' if len(found) != 1 else ''} found"
    if result.passed and fast:
        said = f"PASSED: {result.function} by gradcheck's fast_mode (random projections agree)"
        if found:
            return f"{said}; {count} outside tolerance, {worst}"
        return f"{said}; no wrong cell found among {cells:,} ({how})" if cells else said
    if result.passed:
        return f"PASSED: {result.function}, no wrong cell found among {cells:,} ({how})"
    if not found:
        return f"FAILED: {result.function}: {', '.join(failed)}"
    checks = f"{', '.join(failed)}; " if failed else ""
    return f"FAILED: {checks}{count}; {worst}"
