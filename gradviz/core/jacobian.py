"""Analytic and numerical Jacobians, one block per (output i, input j).

Convention (gradcheck's): ``J[r, c] = d out_i.flatten()[r] / d in_j.flatten()[c]``, both
flattened in C order. The analytic rows come from the user's backward (one vector-Jacobian
product per row, batched where the Function allows it); the numerical columns from central
differences, ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``. Both are filled in chunks of
bounded size, so memory stays close to the Jacobians themselves.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch._vmap_internals import _vmap

from gradviz.schema.errors import Cancelled
from gradviz.schema.settings import DEFAULT_CHUNK_BYTES

ProgressFn = Callable[[int, int], None]
CancelFn = Callable[[], bool]
BlockKey = tuple[int, int]



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


def as_tuple(outputs: object) -> tuple:
    return outputs if isinstance(outputs, tuple) else (outputs,)


def call_apply(apply: Callable, args: Sequence, *, clone: bool) -> tuple:
    """Call ``apply``; with ``clone`` every tensor argument is a copy the Function may modify."""
    if clone:
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    return as_tuple(apply(*args))


def chunk_length(bytes_per_item: int, count: int, chunk_bytes: int) -> int:
    return int(max(1, min(count, chunk_bytes // max(1, bytes_per_item))))


def analytical_jacobian(
    outputs: Sequence[torch.Tensor],
    out_indices: Sequence[int],
    inputs: Sequence[torch.Tensor],
    in_indices: Sequence[int],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Progress | None = None,
    batched: bool = True,
) -> tuple[dict[BlockKey, np.ndarray], str]:
    """Rows of every block from vector-Jacobian products through the user's backward.

    Returns the blocks and which path ran: ``"batched"`` (``is_grads_batched``) or
    ``"loop"`` (one backward per row, used where the backward does not batch).
    """
    progress = progress or Progress(0)
    blocks = {
        (i, j): np.empty((outputs[i].numel(), x.numel()))
        for i in out_indices
        for j, x in zip(in_indices, inputs)
    }
    in_numel = sum(x.numel() for x in inputs)
    path = "batched" if batched else "loop"
    for i in out_indices:
        out = outputs[i]
        rows = out.numel()
        k = chunk_length((rows + in_numel) * out.element_size(), rows, chunk_bytes)
        for r0 in range(0, rows, k):
            progress.check_cancel()
            r1 = min(rows, r0 + k)
            grads = None
            if path == "batched":
                try:
                    grads = _batched_vjp(out, inputs, r0, r1)
                except Exception:
                    grads = None  # this backward does not run under vmap; rows one by one instead
                if grads is not None and r0 == 0 and not _agrees_with_loop(grads, out, inputs, progress):
                    grads = None  # it ran under vmap but computed something else there
                path = "batched" if grads is not None else "loop"
            if grads is None:
                grads = _looped_vjp(out, inputs, r0, r1, progress)
            for j, g in zip(in_indices, grads):
                rows_view = torch.from_numpy(blocks[i, j])[r0:r1]
                if g is None:  # input unused by this output: a zero block, as gradcheck takes it
                    rows_view.zero_()
                else:
                    rows_view.copy_(g.detach().reshape(r1 - r0, -1))
            progress.advance(r1 - r0)
    return blocks, path


def _basis(out: torch.Tensor, r0: int, r1: int) -> torch.Tensor:
    """Rows r0..r1 of the identity, each shaped like ``out``: the grad_outputs that pick rows."""
    v = torch.zeros((r1 - r0, out.numel()), dtype=out.dtype, device=out.device)
    v[torch.arange(r1 - r0), torch.arange(r0, r1)] = 1
    return v.view(r1 - r0, *out.shape)


def _batched_vjp(out: torch.Tensor, inputs: Sequence[torch.Tensor], r0: int, r1: int) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's "no batching rule, falling back" performance notes
        return list(
            torch.autograd.grad(
                (out,),
                inputs,
                (_basis(out, r0, r1),),
                retain_graph=True,
                allow_unused=True,
                is_grads_batched=True,
            )
        )


def _looped_vjp(
    out: torch.Tensor, inputs: Sequence[torch.Tensor], r0: int, r1: int, progress: Progress
) -> list:
    per_input: list[list] = [[] for _ in inputs]
    flat = torch.zeros(out.numel(), dtype=out.dtype, device=out.device)
    for r in range(r0, r1):
        progress.check_cancel()
        flat[r] = 1
        grads = torch.autograd.grad(
            (out,), inputs, (flat.view_as(out),), retain_graph=True, allow_unused=True
        )
        flat[r] = 0
        for store, g in zip(per_input, grads):
            store.append(g)
    return [
        None if all(g is None for g in store) else _stack(store, x) for store, x in zip(per_input, inputs)
    ]


def _agrees_with_loop(
    grads: list, out: torch.Tensor, inputs: Sequence[torch.Tensor], progress: Progress
) -> bool:
    """Compare the first batched row with a plain backward call."""
    single = _looped_vjp(out, inputs, 0, 1, progress)
    for g, ref in zip(grads, single):
        if (g is None) != (ref is None):
            return False
        if g is not None:
            if not _same_values(g[0], ref[0], ref):
                return False
    return True


def _same_values(a: torch.Tensor, b: torch.Tensor, scale_from: torch.Tensor) -> bool:
    """Equal up to the rounding a batched kernel may differ by (NaN equals NaN here)."""
    magnitude = torch.nan_to_num(scale_from.detach().abs(), posinf=0.0).max() if scale_from.numel() else 0.0
    atol = 1e-9 * max(float(magnitude), 1.0)
    return torch.allclose(a, b, rtol=1e-6, atol=atol, equal_nan=True)


def _stack(grads: list, like: torch.Tensor) -> torch.Tensor:
    return torch.stack([torch.zeros_like(like) if g is None else g for g in grads])


class _Perturber:
    """Sets one element of a leaf tensor in place and restores it exactly.

    On CPU it writes through a NumPy view, which costs ~100 ns per element instead of the
    ~10 µs of a torch indexing op: this keeps the fallback loop near two forwards per element.
    """

    def __init__(self, x: torch.Tensor) -> None:
        self._cpu = x.device.type == "cpu"
        flat = x.detach().view(-1)
        self._flat = flat.numpy() if self._cpu else flat

    def get(self, c: int) -> object:
        return self._flat[c].copy() if self._cpu else self._flat[c].clone()

    def set(self, c: int, value: object) -> None:
        self._flat[c] = value


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
) -> tuple[dict[BlockKey, np.ndarray], str]:
    """Columns of every block by central differences in the inputs' own dtype.

    Where the forward runs under vmap, one call evaluates a whole chunk of perturbed copies
    (``"batched"``); otherwise each column costs two forwards (``"loop"``). ``clone_inputs``
    gives each forward fresh copies, for Functions that modify an input. Every perturbed
    element is restored to its exact original value.
    """
    progress = progress or Progress(0)
    path = "batched" if batched else "loop"
    blocks: dict[BlockKey, np.ndarray] = {}
    with torch.inference_mode():
        reference = call_apply(apply, args, clone=True)
        for j in in_indices:
            columns = _ColumnFiller(apply, args, j, reference, out_indices, eps, clone_inputs)
            for i in out_indices:
                blocks[i, j] = np.empty((reference[i].numel(), args[j].numel()))
            k = chunk_length(columns.bytes_per_column, min(args[j].numel(), MAX_CHUNK_COLUMNS), chunk_bytes)
            for c0 in range(0, args[j].numel(), k):
                c1 = min(args[j].numel(), c0 + k)
                progress.check_cancel()
                diffs = None
                if path == "batched":
                    diffs = columns.batched(c0, c1, verify=(c0 == 0))
                    path = "batched" if diffs is not None else "loop"
                if diffs is None:
                    diffs = columns.looped(c0, c1, progress)
                for i in out_indices:
                    # torch's blocked transpose-copy is ~10x faster here than NumPy's strided assignment
                    target = torch.from_numpy(blocks[i, j])[:, c0:c1]
                    target.copy_(diffs[i].T)
                    target.div_(2 * eps)
                progress.advance(c1 - c0)
    return blocks, path


MAX_CHUNK_COLUMNS = 1024  # keeps progress and Cancel responsive even when columns are tiny


class _ColumnFiller:
    """``f(x + eps e_c) - f(x - eps e_c)`` for a range of columns c of input j."""

    def __init__(self, apply, args, j, reference, out_indices, eps, clone_inputs) -> None:
        self.apply, self.args, self.j, self.eps = apply, list(args), j, eps
        self.out_indices, self.clone_inputs = list(out_indices), clone_inputs
        self.reference = reference
        out_bytes = sum(reference[i].numel() * reference[i].element_size() for i in out_indices)
        self.bytes_per_column = 2 * (args[j].numel() * args[j].element_size() + out_bytes)

    def looped(self, c0: int, c1: int, progress: Progress) -> dict[int, torch.Tensor]:
        diffs = {
            i: torch.empty(
                (c1 - c0, self.reference[i].numel()),
                dtype=self.reference[i].dtype,
                device=self.reference[i].device,
            )
            for i in self.out_indices
        }
        perturb = _Perturber(self.args[self.j])
        for c in range(c0, c1):
            progress.check_cancel()
            orig = perturb.get(c)
            perturb.set(c, orig + self.eps)
            plus = call_apply(self.apply, self.args, clone=self.clone_inputs)
            perturb.set(c, orig - self.eps)
            minus = call_apply(self.apply, self.args, clone=self.clone_inputs)
            perturb.set(c, orig)
            for i in self.out_indices:
                torch.sub(plus[i].reshape(-1), minus[i].reshape(-1), out=diffs[i][c - c0])
        return diffs

    def batched(self, c0: int, c1: int, *, verify: bool) -> dict[int, torch.Tensor] | None:
        """All columns c0..c1 from one vmapped forward, or None where the forward does not batch."""
        x = self.args[self.j].detach()
        k = c1 - c0
        rows, cols = torch.arange(k, device=x.device), torch.arange(c0, c1, device=x.device)
        stacked = x.reshape(1, -1).repeat(2 * k, 1)
        original = stacked[rows, cols]
        stacked[rows, cols] = original + self.eps  # same arithmetic as the loop: bitwise equal inputs
        stacked[rows + k, cols] = original - self.eps

        def forward_one(xj: torch.Tensor) -> tuple[torch.Tensor, ...]:
            call = list(self.args)
            call[self.j] = xj.view(x.shape)
            outputs = call_apply(self.apply, call, clone=self.clone_inputs)
            return tuple(outputs[i] for i in self.out_indices)

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs = _vmap(forward_one)(stacked)
        except Exception:
            return None
        diffs = {i: (o[:k] - o[k:]).reshape(k, -1) for i, o in zip(self.out_indices, outs)}
        if verify and not self._agrees_with_loop(diffs, c0):
            return None
        return diffs

    def _agrees_with_loop(self, diffs: dict[int, torch.Tensor], c0: int) -> bool:
        """Guard against a forward that runs under vmap but means something else there."""
        loop = self.looped(c0, c0 + 1, Progress(0))
        for i in self.out_indices:
            if not _same_values(diffs[i][0], loop[i][0], self.reference[i]):
                return False
        return True
