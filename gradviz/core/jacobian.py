"""Jacobians, one block per (output i, input j), and the analytic side of them.

Convention (gradcheck's): ``J[r, c] = d out_i.flatten()[r] / d in_j.flatten()[c]``, both
flattened in C order. The analytic rows come from the user's backward (one vector-Jacobian
product per row, batched where the Function allows it); the numerical columns, by central
differences, from ``core/numerical_jacobian.py``. Both are filled in chunks of bounded size,
count their work on one ``Progress`` and guard their batched paths the same way (here).

Never trust a buffer handed to user code: a backward may return the very grad_output it was
given (or write into it), a forward may return its input or a view of it, or a buffer it
reuses. Every value user code returns is copied into gradviz's own arrays before the next
call can change it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from gradviz.core.quiet_warnings import warnings_ignored
from gradviz.core.vjp import vjp
from gradviz.schema.errors import Cancelled
from gradviz.schema.settings import DEFAULT_CHUNK_BYTES
from gradviz.schema.time_left import CHECK_UNIT

ProgressFn = Callable[[int, int], None]
CancelFn = Callable[[], bool]
BlockKey = tuple[int, int]


@dataclass
class Progress:
    """Counts work units (Jacobian rows plus columns, or what ``unit`` says) and asks whether to stop."""

    total: int
    callback: ProgressFn | None = None
    cancel: CancelFn | None = None
    done: int = 0
    unit: str = CHECK_UNIT  # what is counted, told to a callback that has a ``unit`` to set (the worker's)

    def advance(self, units: int) -> None:
        self.done += units
        if self.callback is not None:
            if hasattr(self.callback, "unit"):
                self.callback.unit = self.unit
            self.callback(self.done, self.total)

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel():
            raise Cancelled()


@dataclass
class Jacobian:
    """Blocks of one side of the comparison and how they were computed."""

    blocks: dict[BlockKey, np.ndarray]
    path: str  # "batched" (vmap) or "loop" (one call per row or column, as gradcheck)
    note: str | None = None  # why a batched path was dropped, when it disagreed with plain calls


def as_tuple(outputs: object) -> tuple:
    if isinstance(outputs, tuple):
        return outputs
    if isinstance(outputs, list):
        return tuple(outputs)
    return (outputs,)


def call_apply(apply: Callable, args: Sequence, *, clone: bool) -> tuple:
    """Call ``apply``; with ``clone`` every tensor argument is a copy the Function may modify."""
    if clone:
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    return as_tuple(apply(*args))


def chunk_length(bytes_per_item: int, count: int, chunk_bytes: int) -> int:
    return int(max(1, min(count, chunk_bytes // max(1, bytes_per_item))))


def _fill_rows(target: np.ndarray, at: int, grads: torch.Tensor | None, rows: int) -> None:
    """Copy ``rows`` gradient rows into ``target[at:at + rows]``; None (input unused) is zeros.

    A sparse gradient counts by its dense values, as in gradcheck's Jacobian (its layout is
    judged by the grad_output check).
    """
    view = torch.from_numpy(target)[at : at + rows]
    if grads is None:
        view.zero_()
    else:
        grads = grads.detach()
        if grads.layout != torch.strided:
            grads = grads.to_dense()
        view.copy_(grads.reshape(rows, -1))


# --- analytic: rows from the user's backward ------------------------------------------------

RowVisitor = Callable[[int, int, int, list[np.ndarray]], None]


def analytical_jacobian(
    outputs: Sequence[torch.Tensor],
    out_indices: Sequence[int],
    inputs: Sequence[torch.Tensor],
    in_indices: Sequence[int],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Progress | None = None,
    batched: bool = True,
    visit: RowVisitor | None = None,
) -> Jacobian:
    """Rows of every block from vector-Jacobian products through the user's backward.

    The batched path (``is_grads_batched``) is used where the backward runs under vmap and its
    first chunk agrees with plain backward calls; otherwise one backward per row, like gradcheck.
    With ``visit``, nothing is kept: each chunk of rows goes to ``visit(i, r0, r1, rows_per_input)``
    in a reused buffer (a second pass compared on the fly costs no second Jacobian of memory).
    """
    progress = progress or Progress(0)
    blocks: dict[BlockKey, np.ndarray] = {}
    in_numel = sum(x.numel() for x in inputs)
    allowed, used, note = batched, set(), None
    for i in out_indices:
        out = outputs[i]
        rows = out.numel()
        k = chunk_length((rows + in_numel) * out.element_size(), rows, chunk_bytes)
        if visit is None:
            for j, x in zip(in_indices, inputs):
                blocks[i, j] = np.empty((rows, x.numel()))
        else:
            buffers = [np.empty((k, x.numel())) for x in inputs]
        for r0 in range(0, rows, k):
            progress.check_cancel()
            r1 = min(rows, r0 + k)
            if visit is None:
                chunk = [blocks[i, j][r0:r1] for j in in_indices]
            else:
                chunk = [b[: r1 - r0] for b in buffers]
            done = False
            if allowed and rows > SMALL:
                # plain calls first: a backward that caches on ctx caches plain tensors, not vmapped ones
                probe = probe_indices(r0, r1) if r0 == 0 else []
                plain = [np.empty((len(probe), t.shape[1])) for t in chunk]
                vjp_rows(out, inputs, probe, plain, progress, at=range(len(probe)))
                with batched_phase():
                    done = _batched_rows(out, inputs, r0, r1, chunk)
                if done and probe:
                    note = batched_disagreement(chunk, plain, [r - r0 for r in probe], out.dtype, "backward", "row")
                    done = note is None
                allowed = done
            if not done:
                vjp_rows(out, inputs, range(r0, r1), chunk, progress, at=range(r1 - r0))
            used.add("batched" if done else "loop")
            if visit is not None:
                visit(i, r0, r1, chunk)
            progress.advance(r1 - r0)
    return Jacobian(blocks, "batched" if used == {"batched"} else "loop", note)


SMALL = 16  # rows or columns up to this many: plain calls, as gradcheck makes them (cheap, and exact); read
# at call time by both sides, so a test can batch tiny Jacobians by setting it once
_PHASE_HOOKS: list[Callable[[bool], None]] = []  # the worker's "now in vmap" reporter, if any


def report_batched_phases(hook: Callable[[bool], None]) -> None:
    """Call ``hook(True)`` before and ``hook(False)`` after every vmapped call into user code, for
    the rest of this process (a run process lives for one request)."""
    _PHASE_HOOKS.append(hook)


@contextlib.contextmanager
def batched_phase() -> Iterator[None]:
    """Around every vmapped call into user code: a run process tells its worker, which retries
    the request without batches if the process dies in there (vmap and ``.data`` can segfault)."""
    for hook in _PHASE_HOOKS:
        hook(True)
    try:
        yield
    finally:
        for hook in _PHASE_HOOKS:
            hook(False)


def probe_indices(start: int, stop: int) -> list[int]:
    """First, middle and last index of a chunk: where batched and plain calls are compared."""
    return sorted({start, (start + stop - 1) // 2, stop - 1})


def _basis(out: torch.Tensor, r0: int, r1: int) -> torch.Tensor:
    """Rows r0..r1 of the identity, each shaped like ``out``: the grad_outputs that pick rows."""
    v = torch.zeros((r1 - r0, out.numel()), dtype=out.dtype, device=out.device)
    v[torch.arange(r1 - r0), torch.arange(r0, r1)] = 1
    return v.view(r1 - r0, *out.shape)


def _batched_rows(
    out: torch.Tensor, inputs: Sequence[torch.Tensor], r0: int, r1: int, chunk: list[np.ndarray]
) -> bool:
    """Rows r0..r1 from one vmapped backward into ``chunk`` (row 0 = row r0); False where it does not batch."""
    try:
        with warnings_ignored():  # vmap's "no batching rule, falling back" performance notes
            grads = vjp((out,), inputs, (_basis(out, r0, r1),), retain_graph=True, batched=True)
        for target, g in zip(chunk, grads):
            _fill_rows(target, 0, g, r1 - r0)
    except Exception:
        return False  # this backward does not run under vmap; rows one by one instead
    return True


def vjp_rows(
    out: torch.Tensor,
    inputs: Sequence[torch.Tensor],
    rows: Sequence[int],
    targets: list[np.ndarray],
    progress: Progress | None = None,
    *,
    at: Sequence[int] | None = None,
) -> None:
    """One backward per row, with a one-hot grad_output, as gradcheck computes them.

    Row ``rows[k]`` goes to row ``at[k]`` of each target (default: the same row). The
    grad_output buffer is cleared before each call (a backward may write into it) and each
    returned gradient is copied out before the next call (it may be that very buffer).
    """
    grad_out = torch.zeros(out.shape, dtype=out.dtype, device=out.device)
    flat = grad_out.view(-1)
    for k, r in enumerate(rows):
        if progress is not None:
            progress.check_cancel()
        flat.zero_()
        flat[r] = 1
        grads = vjp((out,), inputs, (grad_out,), retain_graph=True)
        for target, g in zip(targets, grads):
            _fill_rows(target, r if at is None else at[k], g, 1)


def batched_disagreement(
    batched: list[np.ndarray], plain: list[np.ndarray], at: list[int], dtype: torch.dtype, what: str, unit: str,
    *, scale: float = 0.0,
) -> str | None:
    """None when the batched values at rows ``at`` equal the plain calls' up to rounding.

    Rounding is judged in the dtype the user's code computed in (float32 rounds far more than
    float64): ROUNDING_ULPS units in the last place of the largest value involved (``scale``
    when the values are differences of larger numbers). Anything more is a Function that
    computes something else under vmap, and the plain calls (gradcheck's) win.
    """
    eps = float(torch.finfo(dtype).eps) if dtype.is_floating_point else 0.0
    for target, ref in zip(batched, plain):
        got = target[at]
        tolerance = ROUNDING_ULPS * eps * max(_finite_max(got), _finite_max(ref), scale)
        with np.errstate(invalid="ignore"):
            same = (np.abs(got - ref) <= tolerance) | (got == ref) | (np.isnan(got) & np.isnan(ref))
        if not bool(np.all(same)):
            with np.errstate(invalid="ignore"):
                worst = float(np.nanmax(np.abs(got - ref), initial=0.0))
            return (
                f"The {what} gave different results when called batched (vmap) than when called once per "
                f"{unit} (up to {worst:.3g} apart, more than rounding), so gradviz used one call per {unit}, "
                "as gradcheck does."
            )
    return None


ROUNDING_ULPS = 64


def _finite_max(a: np.ndarray) -> float:
    finite = np.abs(a[np.isfinite(a)])
    return float(finite.max()) if finite.size else 0.0
