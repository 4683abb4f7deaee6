"""What an audit holds at once, within one memory limit, and the refusal when even its least cannot fit.

An audit holds the copies of every captured call's arguments until it ends, and each checked
node's result keeps that node's Jacobians (the reports, maps and files are built from them). So
the limit (``--max-memory-mb`` / ``max_memory_mb``, else ``default_memory_limit``) is the
audit's, not each node's: a node's check may hold full Jacobians only in what the nodes before it
left over, and otherwise takes the large-Jacobian path (random projections, then bisection),
which holds about one row and one column. What no path can do without is the captured copies
and one forward's outputs; when those pass the limit, the audit is refused before any check.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradviz.core.audit_capture import CapturedCall
from gradviz.core.large import BYTES_PER_CELL
from gradviz.schema.errors import SizeLimitError
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import default_memory_limit
from gradviz.schema.units import format_bytes


def audit_limit(max_bytes: int | None) -> int:
    """The audit's memory limit in bytes: the caller's, else the check's default."""
    return max_bytes or default_memory_limit()


def refuse_too_large(calls: Sequence[CapturedCall], plan: Sequence[int | None], limit: int, name: str) -> int:
    """SizeLimitError, one line, when checking some node would pass ``limit`` even on the
    large-Jacobian path: the captured copies plus that node's outputs. Returns the bytes the
    captured copies hold."""
    held = sum(call.in_bytes for call in calls)
    checked = [calls[k] for k, p in enumerate(plan) if p == k]
    if not checked:
        return held
    biggest = max(checked, key=lambda call: call.out_bytes)
    need = held + biggest.out_bytes
    if need > limit:
        title = f"{biggest.module or '(model)'} → {biggest.function}, call {biggest.call} of {biggest.calls}"
        raise SizeLimitError(
            f"Too large to audit: checking {title} needs at least {format_bytes(need)}, more than the memory "
            f"limit of {format_bytes(limit)}: {format_bytes(held)} for the copies of the arguments of {name}'s "
            f"{len(calls)} custom call(s) and {format_bytes(biggest.out_bytes)} for the outputs of one of its "
            "forwards, even with its Jacobians searched by random projections, never held. Audit the model on "
            "smaller inputs (a smaller batch or sequence), or raise the limit (--max-memory-mb, max_memory_mb)."
        )
    return held


class MemoryBudget:
    """The audit's limit, less what it holds: the captured copies and the checked nodes' Jacobians."""

    def __init__(self, limit: int, held: int) -> None:
        self.limit, self.used = limit, held

    def node_limit(self) -> int:
        """What the next node's Jacobians may take (at least one byte: then its check searches them)."""
        return max(1, self.limit - self.used)

    def keep(self, result: CheckResult | None) -> None:
        """The node's result is kept with its Jacobians (and the maps built from them)."""
        if result is not None:
            self.used += held_by(result)


def held_by(result: CheckResult) -> int:
    """Bytes a kept result's Jacobians take, with their error map and failing mask."""
    cells = sum(b.analytic.size for b in [*result.blocks, *(result.forward_blocks or [])])
    return cells * BYTES_PER_CELL
