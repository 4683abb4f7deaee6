"""Analytic and numerical Jacobians, one block per (output i, input j).

Convention (gradcheck's): ``J[r, c] = d out_i.flatten()[r] / d in_j.flatten()[c]``, both
flattened in C order. The analytic rows come from the user's backward (one vector-Jacobian
product per row, batched where the Function allows it); the numerical columns from central
differences, ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``, in the output's own dtype as
gradcheck computes them. Both are filled in chunks of bounded size.

Never trust a buffer handed to user code: a backward may return the very grad_output it was
given (or write into it), a forward may return its input or a view of it, or a buffer it
reuses. Every value user code returns is copied into gradviz's own arrays before the next
call can change it.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch._vmap_internals import _vmap

from gradviz.core.inputs import shares_memory_with_others
from gradviz.core.vjp import vjp
from gradviz.schema.errors import Cancelled, ErrorKind, UserCodeError
from gradviz.schema.settings import DEFAULT_CHUNK_BYTES

ProgressFn = Callable[[int, int], None]
CancelFn = Callable[[], bool]
BlockKey = tuple[int, int]

MAX_CHUNK_COLUMNS = 1024  # keeps progress and Cancel responsive even when columns are tiny


@dataclass
class Progress:
    """Counts work units (Jacobian rows plus columns) and asks whether to stop."""

    total: int
    callback: ProgressFn | None = None
    cancel: CancelFn | None = None
    done: int = 0

    def advance(self, units: int) -> None:
        self.done += units
        if self.callback is not None:
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
                probe = _probe(r0, r1) if r0 == 0 else []
                plain = [np.empty((len(probe), t.shape[1])) for t in chunk]
                vjp_rows(out, inputs, probe, plain, progress, at=range(len(probe)))
                with batched_phase():
                    done = _batched_rows(out, inputs, r0, r1, chunk)
                if done and probe:
                    note = _disagreement(chunk, plain, [r - r0 for r in probe], out.dtype, "backward", "row")
                    done = note is None
                allowed = done
            if not done:
                vjp_rows(out, inputs, range(r0, r1), chunk, progress, at=range(r1 - r0))
            used.add("batched" if done else "loop")
            if visit is not None:
                visit(i, r0, r1, chunk)
            progress.advance(r1 - r0)
    return Jacobian(blocks, "batched" if used == {"batched"} else "loop", note)


SMALL = 16  # rows or columns up to this many: plain calls, as gradcheck makes them (cheap, and exact)
_PHASE_HOOK: list[Callable[[bool], None]] = []  # the worker's "now in vmap" reporter, if any


@contextlib.contextmanager
def batched_phase() -> Iterator[None]:
    """Around every vmapped call into user code: a run process tells its worker, which retries
    the request without batches if the process dies in there (vmap and ``.data`` can segfault)."""
    for hook in _PHASE_HOOK:
        hook(True)
    try:
        yield
    finally:
        for hook in _PHASE_HOOK:
            hook(False)


def _probe(start: int, stop: int) -> list[int]:
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # vmap's "no batching rule, falling back" performance notes
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


def _disagreement(
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


# --- numerical: columns from central differences -----------------------------------------------


class _Perturber:
    """Sets elements of an input tensor in place, by C-order index, and restores them exactly.

    The tensor is the caller's own (as in gradcheck): whatever else reads its memory (a module
    holding it as its weight) sees the perturbation too.

    On CPU it writes through a NumPy view (~100 ns per element instead of ~10 µs for a torch
    indexing op), which keeps the loop near two forwards per element. Strided inputs keep
    their strides: the element is found by its multi-index.
    """

    def __init__(self, x: torch.Tensor) -> None:
        self.shape = tuple(x.shape)
        # ``.data`` (gradcheck's way): the caller's storage, with a version counter of its own, so the
        # writes never invalidate what the forward saved of x for the backward that follows
        self._tensor = x.data
        self._contiguous = self._tensor.is_contiguous()
        self._array = None
        if x.device.type == "cpu":
            try:
                array = self._tensor.numpy()
                self._array = array.reshape(-1) if self._contiguous else array
            except TypeError:  # a dtype NumPy lacks (bfloat16): torch indexing instead
                self._array = None
        self._flat = self._tensor.view(-1) if self._contiguous else None

    def values(self, values: torch.Tensor) -> object:
        """``values`` in the form ``set`` writes fastest."""
        return values.numpy() if self._array is not None else values

    def set(self, c: int, value: object) -> None:
        """Write ``value`` (an element of what ``values`` returned) at C-order position ``c``."""
        index = c if self._contiguous else tuple(int(v) for v in np.unravel_index(c, self.shape))
        if self._array is not None:
            self._array[index] = value
        elif self._flat is not None:
            self._flat[c] = value
        else:
            self._tensor[index] = value


def numerical_jacobian(
    apply: Callable,
    args: Sequence,
    out_indices: Sequence[int],
    in_indices: Sequence[int],
    *,
    eps: float,
    clone_inputs: bool = False,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Progress | None = None,
    batched: bool = True,
) -> Jacobian:
    """Columns of every block by central differences in the outputs' own dtype.

    Where the forward runs under vmap, one call evaluates a whole chunk of perturbed copies
    (``"batched"``); otherwise each column costs two forwards (``"loop"``). ``clone_inputs``
    gives each forward fresh copies, for Functions that modify an input. Perturbed values are
    computed as gradcheck computes them (``x ± eps`` in the input's dtype) and every element is
    restored to its exact original value. Plain forwards run as gradcheck runs them: grad mode on
    and the arguments requiring grad as given (copies included), so a forward that reads
    ``ctx.needs_input_grad`` or ``requires_grad`` computes what it computes under gradcheck; the
    batched forward runs without autograd and is checked against plain ones.
    """
    progress = progress or Progress(0)
    used, note = set(), None
    blocks: dict[BlockKey, np.ndarray] = {}
    with torch.enable_grad():
        reference = tuple(
            o.detach().clone() if isinstance(o, torch.Tensor) else o for o in call_apply(apply, args, clone=True)
        )
        for j in in_indices:
            columns = _ColumnFiller(apply, args, j, reference, out_indices, eps, clone_inputs)
            numel = args[j].numel()
            for i in out_indices:
                blocks[i, j] = np.empty((reference[i].numel(), numel))
            k = chunk_length(columns.bytes_per_column, min(numel, MAX_CHUNK_COLUMNS), chunk_bytes)
            allowed = batched and numel > SMALL and columns.can_batch and columns.same_without_autograd()
            loop_seconds = None  # per column, timed on the probe columns of the first chunk
            batch_seconds: list[float] = []  # per column, of each batched chunk after the first
            for c0 in range(0, numel, k):
                c1 = min(numel, c0 + k)
                progress.check_cancel()
                diffs = None
                if allowed:
                    probe = _probe(c0, c1) if c0 == 0 else []
                    start = time.perf_counter()
                    plain = columns.looped(probe)
                    if probe:
                        loop_seconds = (time.perf_counter() - start) / len(probe)
                    start = time.perf_counter()
                    with batched_phase():
                        diffs = columns.batched(c0, c1)
                    if c0 > 0:
                        batch_seconds.append((time.perf_counter() - start) / (c1 - c0))
                    if diffs is not None and probe:
                        note = columns.disagreement(diffs, plain, [c - c0 for c in probe])
                        diffs = None if note else diffs
                    allowed = diffs is not None
                    if allowed and loop_is_faster(loop_seconds, batch_seconds):
                        allowed = False  # from the next chunk on: the same values, sooner
                if diffs is None:
                    diffs = columns.looped(range(c0, c1), progress)
                used.add("batched" if allowed else "loop")
                for i in out_indices:
                    _store_columns(blocks[i, j], c0, diffs[i], eps)
                progress.advance(c1 - c0)
    return Jacobian(blocks, "batched" if used == {"batched"} else "loop", note)


LOOP_MARGIN = 1.25  # the loop must win clearly: timings of a few calls are noisy


def loop_is_faster(loop_seconds: float | None, batch_seconds: Sequence[float]) -> bool:
    """Whether plain calls cost less per column than the last two batched chunks, both.

    Batches win for cheap forwards (one call instead of thousands); once a forward is costly
    (a 80x80 matmul, ~20 us) the batch only adds the copies of its inputs and outputs, and
    plain calls are faster. Never judged on the first chunk (the first vmapped call of a
    process pays one-time costs a loop never sees again) nor on one chunk alone (a chunk that
    faults in fresh pages or meets a busy core would send a cheap Function down the loop).
    """
    if loop_seconds is None or len(batch_seconds) < 2:
        return False
    return loop_seconds * LOOP_MARGIN < min(batch_seconds[-2:])


def _store_columns(block: np.ndarray, c0: int, diffs: torch.Tensor, eps: float) -> None:
    """``block[:, c0:c0+k] = diffs.T / (2 eps)``, the division in the output's dtype (gradcheck's)."""
    diffs.div_(2 * eps)
    # torch's blocked transpose-copy is ~10x faster here than NumPy's strided assignment
    torch.from_numpy(block)[:, c0 : c0 + diffs.shape[0]].copy_(diffs.T)


class _ColumnFiller:
    """``f(x + eps e_c) - f(x - eps e_c)`` for a range of columns c of input j."""

    def __init__(self, apply, args, j, reference, out_indices, eps, clone_inputs) -> None:
        self.apply, self.args, self.j, self.eps = apply, list(args), j, eps
        self.out_indices, self.clone_inputs = list(out_indices), clone_inputs
        self.reference = reference
        x = args[j].detach()
        self.values = x.flatten().clone()  # C order, whatever the strides; a copy, never a view of x
        # the batched copies are contiguous and alias nothing: strided or shared inputs stay exact
        self.can_batch = x.is_contiguous() and not shares_memory_with_others(args, j)
        out_bytes = sum(reference[i].numel() * reference[i].element_size() for i in out_indices)
        self.bytes_per_column = 2 * (x.numel() * x.element_size() + out_bytes)

    def _empty(self, count: int) -> dict[int, torch.Tensor]:
        ref = self.reference
        return {
            i: torch.empty((count, ref[i].numel()), dtype=ref[i].dtype, device=ref[i].device)
            for i in self.out_indices
        }

    def looped(self, columns: Sequence[int], progress: Progress | None = None) -> dict[int, torch.Tensor]:
        """Two forwards per column; each output copied out at once (it may alias the input)."""
        columns = list(columns)
        diffs = self._empty(len(columns))
        if not columns:
            return diffs
        perturb = _Perturber(self.args[self.j])
        original = self.values[torch.tensor(columns, dtype=torch.long, device=self.values.device)]
        plus, minus = perturb.values(original + self.eps), perturb.values(original - self.eps)
        original = perturb.values(original)
        for k, c in enumerate(columns):
            if progress is not None:
                progress.check_cancel()
            perturb.set(c, plus[k])
            try:
                outputs = call_apply(self.apply, self.args, clone=self.clone_inputs)
                for i in self.out_indices:
                    diffs[i][k].copy_(self._output(outputs, i, c).detach().reshape(-1))
                perturb.set(c, minus[k])
                outputs = call_apply(self.apply, self.args, clone=self.clone_inputs)
                for i in self.out_indices:
                    diffs[i][k].sub_(self._output(outputs, i, c).detach().reshape(-1))
            finally:
                perturb.set(c, original[k])
        return diffs

    def _output(self, outputs: tuple, i: int, c: int) -> torch.Tensor:
        """Output i of a perturbed forward, refused when its shape or dtype moved with the input."""
        ref, got = self.reference[i], outputs[i] if i < len(outputs) else None
        if not isinstance(got, torch.Tensor) or got.shape != ref.shape or got.dtype != ref.dtype:
            what = (
                f"{tuple(got.shape)} {str(got.dtype).removeprefix('torch.')}"
                if isinstance(got, torch.Tensor)
                else type(got).__name__
            )
            raise UserCodeError(
                ErrorKind.BAD_OUTPUT,
                f"forward returned a different output {i} when input {self.j} element {c} was moved by "
                f"±eps: {what} instead of {tuple(ref.shape)} {str(ref.dtype).removeprefix('torch.')}. "
                "Finite differences need outputs whose shape and dtype do not depend on the input values.",
            )
        return got

    def batched(self, c0: int, c1: int) -> dict[int, torch.Tensor] | None:
        """All columns c0..c1 from one vmapped forward, or None where the forward does not batch."""
        x = self.args[self.j].detach()
        k = c1 - c0
        rows, cols = torch.arange(k, device=x.device), torch.arange(c0, c1, device=x.device)
        stacked = self.values.reshape(1, -1).repeat(2 * k, 1)
        original = self.values[c0:c1]
        stacked[rows, cols] = original + self.eps  # the loop's arithmetic: bitwise equal inputs
        stacked[rows + k, cols] = original - self.eps

        def forward_one(xj: torch.Tensor) -> tuple[torch.Tensor, ...]:
            call = list(self.args)
            call[self.j] = xj.view(x.shape)
            outputs = call_apply(self.apply, call, clone=self.clone_inputs)
            return tuple(outputs[i] for i in self.out_indices)

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.no_grad():  # cheap; the guard catches a forward that depends on grad mode
                    outs = _vmap(forward_one)(stacked)
            diffs = {}
            for i, o in zip(self.out_indices, outs):
                if o.shape[1:] != self.reference[i].shape or o.dtype != self.reference[i].dtype:
                    return None  # the loop gives the precise error
                o = o.detach()
                diffs[i] = (o[:k] - o[k:]).reshape(k, -1)
        except Exception:
            return None
        return diffs

    def same_without_autograd(self) -> bool:
        """The batched forward sees input j without requires_grad and runs in no-grad mode; a
        forward that reads ``ctx.needs_input_grad`` or ``requires_grad`` computes something else
        then. One plain forward in those conditions, against the reference, tells."""
        call = list(self.args)
        call[self.j] = self.args[self.j].detach()
        try:
            with torch.no_grad():
                outputs = call_apply(self.apply, call, clone=self.clone_inputs)
            seen = [outputs[i].detach() for i in self.out_indices]
        except Exception:
            return False
        for i, got in zip(self.out_indices, seen):
            ref = self.reference[i]
            if not isinstance(got, torch.Tensor) or got.shape != ref.shape:
                return False
            as_numpy = [t.cpu().double().numpy().reshape(1, -1) for t in (got, ref)]
            if _disagreement(as_numpy[:1], as_numpy[1:], [0], ref.dtype, "forward", "column"):
                return False
        return True

    def disagreement(self, diffs: dict[int, torch.Tensor], plain: dict[int, torch.Tensor], at: list[int]) -> str | None:
        """Guard against a forward that runs under vmap but means something else there.

        The compared values are differences f(x+eps) - f(x-eps): rounding is judged against the
        size of f itself, not of the difference.
        """
        for i in self.out_indices:
            ref = self.reference[i]
            scale = float(ref.detach().abs().nan_to_num(posinf=0.0, neginf=0.0).max()) if ref.numel() else 0.0
            got = diffs[i].detach().cpu().double().numpy()
            expected = plain[i].detach().cpu().double().numpy()
            note = _disagreement([got], [expected], at, ref.dtype, "forward", "column", scale=scale)
            if note:
                return note
        return None
