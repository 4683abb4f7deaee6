"""The numerical Jacobian: columns from central differences, as gradcheck computes them.

``J[:, c] = (f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``, in the output's own dtype, for every
element c of each input (C order). The input's own storage is perturbed in place and every
element restored bit for bit; where the forward runs under vmap, one call evaluates a chunk of
perturbed copies, checked against plain calls. Every output is copied out before the next call
(a forward may return its input, or a buffer it reuses).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch._vmap_internals import _vmap

from gradviz.core import jacobian
from gradviz.core.inputs import shares_memory_with_others
from gradviz.core.jacobian import (
    BlockKey,
    Jacobian,
    Progress,
    batched_disagreement,
    batched_phase,
    call_apply,
    chunk_length,
    probe_indices,
)
from gradviz.core.perturb import FIXED_OUTPUTS
from gradviz.core.quiet_warnings import warnings_ignored
from gradviz.schema.errors import ErrorKind, UserCodeError
from gradviz.schema.settings import DEFAULT_CHUNK_BYTES

MAX_CHUNK_COLUMNS = 1024  # keeps progress and Cancel responsive even when columns are tiny


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
    reference: Sequence | None = None,
) -> Jacobian:
    """Columns of every block by central differences in the outputs' own dtype.

    Where the forward runs under vmap, one call evaluates a whole chunk of perturbed copies
    (``"batched"``); otherwise each column costs two forwards (``"loop"``). ``clone_inputs``
    gives each forward fresh copies, for Functions that modify an input. Perturbed values are
    computed as gradcheck computes them (``x ± eps`` in the input's dtype) and every element is
    restored to its exact original value. Plain forwards run as gradcheck runs them: grad mode on
    and the arguments requiring grad as given (copies included), so a forward that reads
    ``ctx.needs_input_grad`` or ``requires_grad`` computes what it computes under gradcheck; the
    batched forward runs without autograd and is checked against plain ones. ``reference`` is
    the outputs of a plain forward on fresh copies of ``args``, detached and copied, when the
    caller already ran one (``user_code.second_forward``).
    """
    progress = progress or Progress(0)
    used, note = set(), None
    blocks: dict[BlockKey, np.ndarray] = {}
    with torch.enable_grad():
        if reference is None:
            outputs = call_apply(apply, args, clone=True)
            reference = tuple(o.detach().clone() if isinstance(o, torch.Tensor) else o for o in outputs)
        for j in in_indices:
            columns = ColumnFiller(apply, args, j, reference, out_indices, eps, clone_inputs)
            numel = args[j].numel()
            for i in out_indices:
                blocks[i, j] = np.empty((reference[i].numel(), numel))
            k = chunk_length(columns.bytes_per_column, min(numel, MAX_CHUNK_COLUMNS), chunk_bytes)
            allowed = batched and numel > jacobian.SMALL and columns.can_batch and columns.same_without_autograd()
            loop_seconds = None  # per column, timed on the probe columns of the first chunk
            batch_seconds: list[float] = []  # per column, of each batched chunk after the first
            for c0 in range(0, numel, k):
                c1 = min(numel, c0 + k)
                progress.check_cancel()
                diffs = None
                if allowed:
                    probe = probe_indices(c0, c1) if c0 == 0 else []
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
                    if not allowed:
                        columns.release()
                if diffs is None:
                    diffs = columns.looped(range(c0, c1), progress)
                used.add("batched" if allowed else "loop")
                for i in out_indices:
                    _store_columns(blocks[i, j], c0, diffs[i], eps)
                progress.advance(c1 - c0)
            columns.release()
    return Jacobian(blocks, "batched" if used == {"batched"} else "loop", note)


LOOP_MARGIN = 1.25  # the loop must win clearly: timings of a few calls are noisy


def loop_is_faster(loop_seconds: float | None, batch_seconds: Sequence[float]) -> bool:
    """Whether plain calls cost less per column than every batched chunk timed so far.

    Batches win for cheap forwards (one call instead of thousands); once a forward is costly
    (a 80x80 matmul, ~20 us) the batch only adds the copies of its inputs and outputs, and
    plain calls are faster. Never judged on the first chunk (the first vmapped call of a
    process pays one-time costs a loop never sees again) nor on one chunk alone. Judged on the
    fastest chunk, not the latest: a busy core only ever slows a chunk down, and on a loaded
    machine two slow chunks in a row sent a 64x64 matmul down a loop 1.5x slower.
    """
    if loop_seconds is None or len(batch_seconds) < 2:
        return False
    return loop_seconds * LOOP_MARGIN < min(batch_seconds)


def _store_columns(block: np.ndarray, c0: int, diffs: torch.Tensor, eps: float) -> None:
    """``block[:, c0:c0+k] = diffs.T / (2 eps)``, the division in the output's dtype (gradcheck's)."""
    diffs.div_(2 * eps)
    # torch's blocked transpose-copy is ~10x faster here than NumPy's strided assignment
    torch.from_numpy(block)[:, c0 : c0 + diffs.shape[0]].copy_(diffs.T)


class ColumnFiller:
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
        self._stack: torch.Tensor | None = None  # the batched chunks' perturbed copies: see _stacked

    def _stacked(self, count: int) -> torch.Tensor:
        """``count`` copies of the input, in one buffer kept for every chunk of this input.

        A chunk's stack is the largest block it allocates (megabytes). Freed after each chunk,
        malloc may hand part of its hole to any small allocation in between and then place the
        next stack on fresh pages, which a fresh run process must fault in again. Each chunk
        rewrites every row, so what a forward did to its copies never reaches the next chunk.
        """
        if self._stack is None or self._stack.shape[0] < count:
            self._stack = torch.empty((count, self.values.numel()), dtype=self.values.dtype, device=self.values.device)
        stacked = self._stack[:count]
        stacked.copy_(self.values.expand(count, -1))
        return stacked

    def release(self) -> None:
        """Give the batched chunks' buffer back: the loop takes over, or the input is done."""
        self._stack = None

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
                f"{FIXED_OUTPUTS}",
            )
        return got

    def batched(self, c0: int, c1: int) -> dict[int, torch.Tensor] | None:
        """All columns c0..c1 from one vmapped forward, or None where the forward does not batch."""
        x = self.args[self.j].detach()
        k = c1 - c0
        rows, cols = torch.arange(k, device=x.device), torch.arange(c0, c1, device=x.device)
        stacked = self._stacked(2 * k)
        original = self.values[c0:c1]
        stacked[rows, cols] = original + self.eps  # the loop's arithmetic: bitwise equal inputs
        stacked[rows + k, cols] = original - self.eps

        def forward_one(xj: torch.Tensor) -> tuple[torch.Tensor, ...]:
            call = list(self.args)
            call[self.j] = xj.view(x.shape)
            outputs = call_apply(self.apply, call, clone=self.clone_inputs)
            return tuple(outputs[i] for i in self.out_indices)

        try:
            with warnings_ignored():
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
            if batched_disagreement(as_numpy[:1], as_numpy[1:], [0], ref.dtype, "forward", "column"):
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
            note = batched_disagreement([got], [expected], at, ref.dtype, "forward", "column", scale=scale)
            if note:
                return note
        return None
