"""A model audit's result: one entry per custom node the forward called, each with its check.

The core fills it (in the caller's process for ``gradviz.audit``, in the worker for
``gradviz audit``); the CLI prints it and writes its JSON documents. Torch-free, like the rest
of the schema: a node's check is the ``CheckResult`` a single Function's check gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gradviz.schema.mismatch import failing_cells
from gradviz.schema.report import result_to_dict, verdict_line
from gradviz.schema.results import CheckResult

PASSED, FAILED, ERROR, NOT_CHECKED = "passed", "failed", "error", "not checked"
BUILTIN_NOTE = (
    "Built-in PyTorch operations (nn.Linear, softmax, matmul, ...) are not checked: their "
    "backward is PyTorch's own and tested there; only custom Functions and custom ops are."
)


@dataclass
class AuditNode:
    """One call of a custom Function or custom op, and what its check found."""

    function: str  # the Function class's __name__, or ``ns::name`` for a custom op
    module: str  # dotted path of the innermost module whose forward made the call ("" at the top)
    call: int  # 1-based among the calls of the same Function
    calls: int  # how many calls of it the forward made
    result: CheckResult | None = None  # None: not checked (``reason``) or its check raised
    reason: str | None = None  # why not checked, or the error its check raised
    error: bool = False  # the check raised in the node's own code (a failure, as for gradcheck)
    shapes: list[list[int] | None] = field(default_factory=list)  # of its arguments (None: not a tensor)
    same_as: int | None = None  # 1-based place of an earlier node with exactly these inputs, whose check it shares
    graph: dict[str, Any] | None = None  # its autograd graph at its captured inputs (``GraphModel.to_dict``), when asked
    graph_error: str | None = None  # why that graph could not be drawn
    inputs: str | None = None  # digest of its captured arguments, when asked (``core.audit.inputs_digest``)

    @property
    def status(self) -> str:
        if self.error:
            return ERROR
        if self.result is None:
            return NOT_CHECKED
        return PASSED if self.result.passed else FAILED

    @property
    def failed(self) -> bool:
        return self.status in (FAILED, ERROR)

    @property
    def title(self) -> str:
        """``head → LeakyCapFn, call 2 of 2``: the node as a failure message names it."""
        return f"{self.module or '(model)'} → {self.function}, call {self.call} of {self.calls}"

    def summary(self) -> str:
        """The title and, for a failure, its worst cells; why, for a node not checked."""
        if self.result is None:
            return f"{self.title}: {self.status}: {self.reason}"
        if self.result.passed:
            return f"{self.title}: {verdict_line(self.result)}"
        cells = failing_cells(self.result, 3)
        if cells:
            worst = "; ".join(f"{c.label} analytic {c.analytic:.6g}, numerical {c.numerical:.6g}" for c in cells)
            return f"{self.title}: {worst} …" if self.result.n_failing > len(cells) else f"{self.title}: {worst}"
        return f"{self.title}: {verdict_line(self.result)}"

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document of one node: where it is, its status and its check's document."""
        return {
            "node": {
                "function": self.function,
                "module": self.module,
                "call": self.call,
                "calls": self.calls,
                "status": self.status,
                "passed": self.status == PASSED,
                "reason": self.reason,
                "shapes": self.shapes,
                "same_as": self.same_as,
            },
            "report": result_to_dict(self.result) if self.result is not None else None,
        }


@dataclass
class AuditResult:
    """Every custom node of one forward, in call order, and what was not checked."""

    model: str
    nodes: list[AuditNode]
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def checked(self) -> list[AuditNode]:
        return [n for n in self.nodes if n.status != NOT_CHECKED]

    @property
    def failing(self) -> list[AuditNode]:
        return [n for n in self.nodes if n.failed]

    @property
    def passed(self) -> bool:
        """Every checked node passes (and at least one was checked)."""
        return bool(self.checked) and not self.failing

    def summary_dict(self) -> dict[str, Any]:
        """The ``--json`` summary document."""
        return {
            "audit": {
                "model": self.model,
                "passed": self.passed,
                "nodes": len(self.nodes),
                "checked": len(self.checked),
                "failing": [n.title for n in self.failing],
                "not_checked": [n.title for n in self.nodes if n.status == NOT_CHECKED],
                "notes": self.notes,
                "seconds": self.seconds,
            }
        }

    def verdict_line(self) -> str:
        """The verdict, and how many calls it does not cover (a pass says nothing of those)."""
        checked, unchecked = len(self.checked), len(self.nodes) - len(self.checked)
        rest = f" ({unchecked} call(s) not checked: see each one's reason)" if unchecked else ""
        if self.passed:
            return f"PASSED: {self.model}, all {checked} checked custom node call(s) match finite differences{rest}"
        failing = "; ".join(n.title for n in self.failing)
        return f"FAILED: {self.model}, {len(self.failing)} of {checked} checked custom node call(s): {failing}{rest}"

    def message(self) -> str:
        """The failure message: every failing node with its worst cells, then the verdict."""
        lines = [self.verdict_line(), ""]
        lines += [n.summary() for n in self.failing]
        return "\n".join(lines)


def format_audit_table(audit: AuditResult) -> str:
    """One row per node, the failing ones first, then the notes and the verdict."""
    order = sorted(audit.nodes, key=lambda n: (not n.failed, n.status == NOT_CHECKED))
    width = max([len("node"), *(len(n.title) for n in order)])
    lines = [f"{'node':<{width}}  {'status':<11}  detail"]
    for n in order:
        if n.result is not None:
            detail = verdict_line(n.result) + (f" (the check of node {n.same_as}: the same inputs)" if n.same_as else "")
        else:
            detail = n.reason or ""
        lines.append(f"{n.title:<{width}}  {n.status:<11}  {detail}")
    lines.append("")
    lines += [f"note: {note}" for note in audit.notes]
    lines.append(f"{audit.verdict_line()}  ({audit.seconds:.3f} s)")
    return "\n".join(lines)
