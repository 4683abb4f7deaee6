"""What the app knows of a finished check: JSON from the worker plus the .npy arrays it wrote.

NumPy only (no torch, no Qt), so the GUI process stays light and these views are testable
on their own. Arrays are loaded with ``allow_pickle=False``: a result file cannot run code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradviz.schema.indices import cell_index, cell_label


@dataclass
class BlockView:
    """One (output i, input j) block: rows are output elements, columns input elements."""

    output: int
    input: int
    out_shape: tuple[int, ...]
    in_shape: tuple[int, ...]
    analytic: np.ndarray
    numerical: np.ndarray
    error: np.ndarray
    failing: np.ndarray
    max_abs_error: float
    n_failing: int
    worst: tuple[int, int] | None
    hints: list[str] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        return self.analytic.shape

    @property
    def passed(self) -> bool:
        return self.n_failing == 0

    def cell_index(self, row: int, col: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return cell_index(row, col, self.out_shape, self.in_shape)


@dataclass
class CheckView:
    function: str
    device: str
    dtype: str
    passed: bool
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    blocks: list[BlockView]
    tolerance: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: list[dict[str, str]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    functions: list[str] = field(default_factory=list)

    @classmethod
    def from_summary(cls, summary: dict[str, Any]) -> CheckView:
        blocks = []
        for b in summary["blocks"]:
            arrays = {kind: np.load(path, allow_pickle=False) for kind, path in b["files"].items()}
            blocks.append(
                BlockView(
                    output=b["output"],
                    input=b["input"],
                    out_shape=tuple(b["out_shape"]),
                    in_shape=tuple(b["in_shape"]),
                    analytic=arrays["analytic"],
                    numerical=arrays["numerical"],
                    error=arrays["error"],
                    failing=arrays["failing"],
                    max_abs_error=_number(b["max_abs_error"]),
                    n_failing=b["failing"],
                    worst=tuple(b["worst"]) if b["worst"] else None,
                    hints=b.get("hints", []),
                )
            )
        return cls(
            function=summary["function"],
            device=summary["device"],
            dtype=summary["dtype"],
            passed=summary["passed"],
            inputs=summary["inputs"],
            outputs=summary["outputs"],
            blocks=blocks,
            tolerance=summary["tolerance"],
            warnings=summary.get("warnings", []),
            notes=summary.get("notes", []),
            checks=summary.get("checks", []),
            seconds=summary.get("seconds", {}),
            functions=summary.get("functions", []),
        )

    def input_name(self, block: BlockView) -> str:
        return self.inputs[block.input].get("name", f"in{block.input}")

    def block_title(self, block: BlockView) -> str:
        return f"out{block.output} / {self.input_name(block)}"

    def cell_label(self, block: BlockView, row: int, col: int) -> str:
        """``out0[3,1] / weight[2,0]``."""
        out_idx, in_idx = block.cell_index(row, col)
        return cell_label(block.output, out_idx, self.input_name(block), in_idx)

    def readout(self, block: BlockView, row: int, col: int) -> str:
        """The hover line: where the cell comes from, both values, the error and the rule."""
        a, n = float(block.analytic[row, col]), float(block.numerical[row, col])
        bound = self.tolerance["atol"] + self.tolerance["rtol"] * abs(n)
        err = abs(a - n)
        verdict = f"fails: > {bound:.2g}" if block.failing[row, col] else f"ok: <= {bound:.2g}"
        return f"{self.cell_label(block, row, col)}: analytic {a:.3g}, numerical {n:.3g}, |err| {err:.1e} ({verdict})"

    def verdict_text(self) -> str:
        """One line for the banner."""
        cells = sum(b.analytic.size for b in self.blocks)
        failing = sum(b.n_failing for b in self.blocks)
        if self.passed:
            return f"PASSED: {self.function}, all {cells:,} cells within tolerance"
        failed_blocks = [b for b in self.blocks if not b.passed]
        if not failed_blocks:
            names = ", ".join(c["name"] for c in self.checks if c.get("status") == "failed")
            return f"FAILED: {self.function}: {names}"
        worst = max(failed_blocks, key=lambda b: b.max_abs_error)
        where = self.cell_label(worst, *worst.worst) if worst.worst else ""
        return f"FAILED: {failing:,} of {cells:,} cells; worst {where} (|err| {worst.max_abs_error:.2g})"


def _number(value: float | str | None) -> float:
    if isinstance(value, str):
        return float(value)  # "inf", "-inf", "nan"
    return float("nan") if value is None else float(value)
