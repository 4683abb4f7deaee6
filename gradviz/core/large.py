"""Jacobians too large to hold: random projections first, then the wrong cells by bisection.

For a block of N rows and M columns the analytic side gives ``v^T J`` for any v (one backward)
and the numerical side ``J u`` for any u (two forwards). With v and u random signs on a set of
rows R and columns S, ``(v^T J_a)_S . u_S`` and ``v_R . (J_n u)_R`` differ by about the error of
any one wrong cell in R x S (a single cell enters with weight +-1), so a set that fails splits
into halves until single columns, then single rows, are left; each candidate cell is then
computed exactly (its analytic row, its numerical column) and judged by gradcheck's rule. A
wrong cell of a 10^5 x 10^5 Jacobian is found with about 2 log2(N M) calls, never holding more
than a row or a column.

``too_large`` decides (the check calls it after its first forward); ``verdict_first`` gives the
verdict (gradcheck's fast mode) and calls ``search_block`` per block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from gradviz.core.check_run import CheckRun
from gradviz.core.jacobian import Progress, call_apply
from gradviz.core.vjp import vjp
from gradviz.schema.results import FoundCell, LargeBlock
from gradviz.schema.settings import Tolerance, default_memory_limit
from gradviz.schema.units import format_bytes

MAX_PROBES = 4000  # calls per block before the search stops and says so
MAX_CELLS = 50  # failing cells reported per block
JACOBIAN_BYTES_PER_CELL = 8 + 8  # analytic, numerical (float64): every check holds them
MAP_BYTES_PER_CELL = 4 + 1  # error map (float32), failing mask: built only when read (BlockComparison)
BYTES_PER_CELL = JACOBIAN_BYTES_PER_CELL + MAP_BYTES_PER_CELL


def held_bytes(cells: int, chunk_bytes: int, *, maps: bool = True) -> int:
    """The most a check of ``cells`` Jacobian cells holds at once: both Jacobians, two chunk
    buffers, and with ``maps`` the error map and failing mask (a path that reads them: the
    window's files, --save of the maps, the API's arrays, hints on a failing block)."""
    per_cell = BYTES_PER_CELL if maps else JACOBIAN_BYTES_PER_CELL
    return cells * per_cell + 2 * chunk_bytes


def too_large(run: CheckRun) -> str | None:
    """Why the Jacobians cannot be held (they and their maps would pass the memory limit), or None.

    Counted with the maps, so a check fits whichever path reads it and the verdict never depends
    on who asks."""
    settings = run.settings
    limit = settings.max_jacobian_bytes or default_memory_limit()
    rows = sum(run.outputs[i].numel() for i in run.out_indices)
    cols = sum(x.numel() for x in run.leaves)
    needed = held_bytes(rows * cols, settings.chunk_bytes)
    if needed <= limit:
        return None
    return (
        f"The Jacobians would take {format_bytes(needed)} ({rows:,} output elements × {cols:,} input elements), "
        f"more than the limit of {format_bytes(limit)}: checked by random projections, as gradcheck's fast mode "
        "does, and wrong cells searched by bisection."
    )


@dataclass
class _Block:
    """What the search needs of one (output i, input j) block."""

    fn_apply: Callable
    args: list
    i: int
    j: int
    out: torch.Tensor  # output i of one forward with autograd (for VJPs)
    leaf: torch.Tensor  # input j
    eps: float
    clone_inputs: bool
    generator: torch.Generator
    probes: int = 0

    @property
    def rows(self) -> int:
        return self.out.numel()

    @property
    def cols(self) -> int:
        return self.leaf.numel()

    def signs(self, count: int, support: np.ndarray, like: torch.Tensor) -> torch.Tensor:
        """Random +-1 on ``support`` (flat indices), 0 elsewhere: a probe vector shaped like ``like``."""
        flat = torch.zeros(count, dtype=like.dtype)
        flat[torch.from_numpy(support)] = torch.randint(0, 2, (len(support),), generator=self.generator).to(like.dtype) * 2 - 1
        return flat.to(like.device).view(like.shape)

    def vjp(self, v: torch.Tensor) -> torch.Tensor:
        """``v^T J_a`` over input j: one backward through the user's code."""
        self.probes += 1
        (g,) = vjp((self.out,), (self.leaf,), (v,), retain_graph=True)
        if g is None:
            return torch.zeros(self.cols, dtype=torch.float64)
        g = g.to_dense() if g.layout != torch.strided else g
        return g.detach().reshape(-1).to(torch.float64).cpu()

    def jvp(self, u: torch.Tensor) -> torch.Tensor:
        """``J_n u`` over output i: central differences along u (two forwards)."""
        self.probes += 2
        x = self.args[self.j].data  # the caller's storage, its version counter untouched (gradcheck's way)
        original = x.clone()
        try:
            with torch.no_grad():
                x.add_(u, alpha=self.eps)
            plus = _output(self.fn_apply, self.args, self.i, self.clone_inputs)
            with torch.no_grad():
                x.copy_(original).sub_(u, alpha=self.eps)
            minus = _output(self.fn_apply, self.args, self.i, self.clone_inputs)
        finally:
            with torch.no_grad():
                x.copy_(original)
        return ((plus - minus) / (2 * self.eps)).reshape(-1).to(torch.float64).cpu()


def _output(apply: Callable, args: list, i: int, clone: bool) -> torch.Tensor:
    with torch.enable_grad():
        outputs = call_apply(apply, args, clone=clone)
    return outputs[i].detach().clone()  # owned before the next call can change it


def search_block(
    apply: Callable,
    args: Sequence,
    out: torch.Tensor,
    i: int,
    j: int,
    tol: Tolerance,
    *,
    clone_inputs: bool = False,
    seed: int = 0,
    max_probes: int = MAX_PROBES,
    max_cells: int = MAX_CELLS,
    progress: Progress | None = None,
) -> LargeBlock:
    """The failing cells of block (i, j), found without materialising it: at most ``max_cells``
    (then ``complete`` is False) within ``max_probes`` calls."""
    block = _Block(apply, list(args), i, j, out, args[j], tol.eps, clone_inputs, torch.Generator().manual_seed(seed))
    cells: list[FoundCell] = []
    all_rows, all_cols = np.arange(block.rows), np.arange(block.cols)
    columns = _failing_columns(block, all_rows, all_cols, tol, max_probes, max_cells, progress)
    for c in columns:
        if len(cells) >= max_cells or block.probes >= max_probes:
            break
        cells.extend(_failing_cells_in_column(block, int(c), tol, max_probes, max_cells - len(cells), progress))
    complete = block.probes < max_probes and len(cells) < max_cells
    return LargeBlock(
        output=i,
        input=j,
        out_shape=tuple(out.shape),
        in_shape=tuple(block.leaf.shape),
        cells=cells[:max_cells],
        probes=block.probes,
        complete=complete,
    )


def disagree(a: float, n: float, tol: Tolerance, terms: int = 1) -> bool:
    """Whether a projection over ``terms`` cells differs by more than one failing cell would make.

    A single wrong cell enters a random-sign projection with weight +-1, so it shows with its
    full error; the relative part of the tolerance is scaled down by sqrt(terms), the size a
    random-sign sum of correct cells grows to. This only steers the search: every cell it finds
    is then judged exactly by gradcheck's rule.
    """
    return not (abs(a - n) <= tol.atol + tol.rtol * abs(n) / max(1.0, terms) ** 0.5)


def _failing_columns(
    block: _Block, rows: np.ndarray, cols: np.ndarray, tol: Tolerance, budget: int, most: int, progress
) -> list[int]:
    """Columns whose random-sign projection over all rows disagrees, by bisection."""
    found: list[int] = []
    v = block.signs(block.rows, rows, block.out)
    left = block.vjp(v)  # one backward serves every column set below
    stack = [cols]
    while stack and block.probes < budget and len(found) < most:
        if progress is not None:
            progress.check_cancel()
        subset = stack.pop()
        u = block.signs(block.cols, subset, block.leaf)
        u_flat = u.reshape(-1).to(torch.float64).cpu()
        a = float(left[torch.from_numpy(subset)] @ u_flat[torch.from_numpy(subset)])
        n = float(v.reshape(-1).to(torch.float64).cpu() @ block.jvp(u))
        if not disagree(a, n, tol, len(rows) * len(subset)):
            continue
        if len(subset) == 1:
            found.append(int(subset[0]))
        else:
            half = len(subset) // 2
            stack.extend([subset[half:], subset[:half]])
    return found


def _failing_cells_in_column(
    block: _Block, c: int, tol: Tolerance, budget: int, most: int, progress
) -> list[FoundCell]:
    """The cells of column c outside tolerance: its numerical column once, rows by bisection."""
    e_c = torch.zeros(block.cols, dtype=block.leaf.dtype)
    e_c[c] = 1
    column = block.jvp(e_c.to(block.leaf.device).view(block.leaf.shape))  # exact, as slow mode computes it
    cells: list[FoundCell] = []
    stack = [np.arange(block.rows)]
    while stack and block.probes < budget and len(cells) < most:
        if progress is not None:
            progress.check_cancel()
        subset = stack.pop()
        if len(subset) == 1:
            r = int(subset[0])
            one = block.signs(block.rows, subset, block.out).abs()
            a = float(block.vjp(one)[c])
            n = float(column[r])
            if disagree(a, n, tol):
                cells.append(FoundCell(r, c, a, n))
            continue
        v = block.signs(block.rows, subset, block.out)
        a = float(block.vjp(v)[c])
        n = float(v.reshape(-1).to(torch.float64).cpu() @ column)
        if disagree(a, n, tol, len(subset)):
            half = len(subset) // 2
            stack.extend([subset[half:], subset[:half]])
    return cells
