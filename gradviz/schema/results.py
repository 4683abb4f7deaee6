"""What a check found, as plain data: NumPy arrays and dataclasses, never torch objects.

The core fills these, the CLI prints them, the worker writes them to disk and every front-end
reads them back; one definition serves all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, asdict, dataclass, field
from typing import Any, cast, overload

import numpy as np

from gradviz.schema.indices import cell_index, cell_label
from gradviz.schema.precision import PrecisionCheck
from gradviz.schema.settings import CheckSettings
from gradviz.schema.sweep import SweepResult

PASSED, FAILED, DECLARED = "passed", "failed", "not supported (declared)"
# a check beyond gradcheck (vmap_rule) that found a problem: named and explained, but not part of the
# verdict, which stays gradcheck's (CheckOutcome.failed is False, so CheckResult.passed ignores it)
WARNED = "warned"
NOT_THE_VERDICT = "not part of gradcheck's verdict"  # said beside every WARNED check
FAST_MODE = "fast_mode"  # the check whose verdict replaces the cells' (gradcheck(fast_mode=True))


@dataclass
class TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...] | None  # None for a non-tensor argument or output
    dtype: str | None
    requires_grad: bool = False  # inputs: Jacobian columns computed; outputs: differentiable


MapBuilder = Callable[[], tuple[np.ndarray, np.ndarray]]  # () -> (error map float32, failing mask bool)


class _LazyMap:
    """A block's error map or failing mask: given (read from files), or built on first read by the
    block's ``build_maps``. A check nobody asks arrays from (``gradviz check --json``, the API
    without arrays) holds only the two Jacobians: 5 bytes a cell fewer."""

    def __init__(self, name: str) -> None:
        self.slot = f"_{name}"

    @overload
    def __get__(self, block: None, owner: type) -> None: ...
    @overload
    def __get__(self, block: BlockComparison, owner: type) -> np.ndarray: ...
    def __get__(self, block: BlockComparison | None, owner: type) -> np.ndarray | None:
        if block is None:
            return None  # the dataclass default: no map given
        if block.__dict__.get(self.slot) is None:
            build: MapBuilder | None = block.__dict__.get("_build_maps")
            if build is None:
                raise ValueError(f"out{block.output} / input {block.input}: no error map and no way to build one")
            block.__dict__["_error"], block.__dict__["_failing"] = build()
        value: np.ndarray = block.__dict__[self.slot]
        return value

    def __set__(self, block: BlockComparison, value: np.ndarray | _LazyMap | None) -> None:
        # __init__ passes the field's default, this descriptor itself, when no map is given
        block.__dict__[self.slot] = None if isinstance(value, _LazyMap) else value


@dataclass
class BlockComparison:
    """One (output i, input j) block: both Jacobians, a summary, and |a - n| and the failing mask.

    The compare (``gradviz.core.compare``) finds the summary in one pass without holding the two
    maps; ``error`` and ``failing`` are built on first read by ``build_maps`` (or given, as when
    read back from files). ``maps_held`` says whether they exist; ``gradviz.core.large.held_bytes``
    counts them only on the paths that read them."""

    output: int
    input: int
    out_shape: tuple[int, ...]
    in_shape: tuple[int, ...]
    analytic: np.ndarray
    numerical: np.ndarray
    max_abs_error: float
    n_failing: int
    n_nonfinite: int
    worst: tuple[int, int] | None
    hints: list[str] = field(default_factory=list)
    kinks: np.ndarray | None = None  # bool map: failing cells at a kink (non-differentiable here); None: not probed
    error: np.ndarray = field(default=cast(np.ndarray, _LazyMap("error")), repr=False, compare=False)
    failing: np.ndarray = field(default=cast(np.ndarray, _LazyMap("failing")), repr=False, compare=False)
    build_maps: InitVar[MapBuilder | None] = None  # how to build error and failing (kept off the fields)

    def __post_init__(self, build_maps: MapBuilder | None) -> None:
        self.__dict__["_build_maps"] = build_maps

    @property
    def maps_held(self) -> bool:
        """Whether the error map and failing mask exist (given, or built because something read them)."""
        return self.__dict__.get("_error") is not None

    @property
    def n_kinks(self) -> int:
        return 0 if self.kinks is None else int(np.count_nonzero(self.kinks))

    @property
    def shape(self) -> tuple[int, int]:
        return self.analytic.shape

    @property
    def passed(self) -> bool:
        return self.n_failing == 0

    @property
    def all_zero(self) -> bool:
        """Both Jacobians identically zero: the block passes, but it has checked nothing of the backward."""
        return self.analytic.size > 0 and not _any_nonzero(self.analytic) and not _any_nonzero(self.numerical)

    def cell_index(self, row: int, col: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(index into output i, index into input j)`` of Jacobian cell ``(row, col)``."""
        return cell_index(row, col, self.out_shape, self.in_shape)


def _any_nonzero(block: np.ndarray, cells: int = 2**16) -> bool:
    """``block.any()``, stopping at the first chunk of rows with a nonzero: NumPy's ``any`` reads
    every cell, 20 ms for a 4096 x 4096 Jacobian that is nonzero in its first row."""
    if block.ndim != 2:
        return bool(block.any())
    step = max(1, cells // max(1, block.shape[1]))
    return any(block[r : r + step].any() for r in range(0, block.shape[0], step))


@dataclass
class FoundCell:
    """One cell of a block too large to hold, computed exactly: its row, column and both values."""

    row: int
    col: int
    analytic: float
    numerical: float


@dataclass
class LargeBlock:
    """A block searched without materialising it (see gradviz.core.large): the failing cells found."""

    output: int
    input: int
    out_shape: tuple[int, ...]
    in_shape: tuple[int, ...]
    cells: list[FoundCell] = field(default_factory=list)
    probes: int = 0  # backward and forward calls the search made
    complete: bool = True  # False: the search stopped at its budget (more failing cells may exist)

    @property
    def shape(self) -> tuple[int, int]:
        rows = int(np.prod(self.out_shape)) if self.out_shape else 1
        cols = int(np.prod(self.in_shape)) if self.in_shape else 1
        return rows, cols

    @property
    def passed(self) -> bool:
        return not self.cells

    def cell_index(self, row: int, col: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return cell_index(row, col, self.out_shape, self.in_shape)


MAX_REGION_SIDE = 128  # rows and columns of a region of a large block computed on demand


REGION_SIDE = 32  # rows and columns of the region the window computes by default


def region_around(row: int, col: int, block: tuple[int, int], side: int = REGION_SIDE) -> tuple[range, range]:
    """Rows and columns of the ``side`` x ``side`` region centred on cell (row, col), moved
    (not shrunk) to lie inside a block of ``block`` = (rows, cols) where it can."""

    def span(centre: int, size: int) -> range:
        start = min(max(0, centre - side // 2), max(0, size - side))
        return range(start, min(size, start + side))

    return span(row, block[0]), span(col, block[1])


@dataclass
class BlockRegion:
    """Rows ``row0..`` and columns ``col0..`` of a block too large to hold, every cell computed
    exactly (``gradviz.core.region``). ``comparison`` holds the region's cells (its arrays are
    indexed from 0) and the whole block's ``out_shape`` and ``in_shape``, so
    ``comparison.cell_index(row, col)`` takes indices into the whole block."""

    row0: int
    col0: int
    comparison: BlockComparison

    @property
    def output(self) -> int:
        return self.comparison.output

    @property
    def input(self) -> int:
        return self.comparison.input

    @property
    def shape(self) -> tuple[int, int]:
        return self.comparison.shape

    def contains(self, row: int, col: int) -> bool:
        rows, cols = self.shape
        return self.row0 <= row < self.row0 + rows and self.col0 <= col < self.col0 + cols

    @property
    def worst(self) -> tuple[int, int] | None:
        """The worst cell, as indices into the whole block."""
        w = self.comparison.worst
        return None if w is None else (self.row0 + w[0], self.col0 + w[1])


@dataclass
class CheckOutcome:
    """One of gradcheck's checks besides the Jacobian comparison, with a sentence of detail."""

    name: str
    status: str  # PASSED, FAILED, DECLARED (double backward of a @once_differentiable backward) or WARNED
    detail: str

    @property
    def passed(self) -> bool:
        return self.status != FAILED

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


@dataclass
class CheckResult:
    function: str
    device: str
    dtype: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    blocks: list[BlockComparison]
    settings: CheckSettings
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    checks: list[CheckOutcome] = field(default_factory=list)
    analytic_path: str = "batched"  # "batched" (one vmapped backward per chunk) or "loop"
    numerical_path: str = "batched"
    functions: list[str] = field(default_factory=list)  # every Function the source offers, its own first
    large_blocks: list[LargeBlock] = field(default_factory=list)  # too large to hold: searched instead
    # fast_mode's verdict came first and no Jacobian was built: ``blocks`` stays empty until the maps
    # are built from the same inputs (``gradviz.Report.blocks`` does so when first read)
    deferred_maps: bool = False
    precision: PrecisionCheck | None = None  # a failing lower-precision check, re-checked in float64
    sweep: SweepResult | None = None  # the eps sweep, when one was asked for
    # check_forward_ad: the forward-mode Jacobian (jvp / forward AD) in ``analytic`` against the same
    # numerical Jacobian, compared by gradcheck's rule; empty unless forward mode was asked for. With
    # check_backward_ad=False ``blocks`` is empty and these alone decide, as in gradcheck.
    forward_blocks: list[BlockComparison] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        fast = any(c.name == FAST_MODE for c in self.checks)  # then gradcheck's verdict is the projections'
        return (
            (fast or all(b.passed for b in self.blocks))
            and (fast or all(b.passed for b in self.large_blocks))
            and (fast or all(b.passed for b in self.forward_blocks))
            and not any(c.failed for c in self.checks)
        )

    def block(self, output: int, input: int) -> BlockComparison:
        return next(b for b in self.blocks if b.output == output and b.input == input)

    def forward_block(self, output: int, input: int) -> BlockComparison:
        return next(b for b in self.forward_blocks if b.output == output and b.input == input)

    def cell_label(self, block: BlockComparison | LargeBlock, row: int, col: int) -> str:
        """``out0[3,1] / weight[2,0]``: where a Jacobian cell comes from."""
        out_idx, in_idx = block.cell_index(row, col)
        return cell_label(block.output, out_idx, self.inputs[block.input].name, in_idx)

    def block_title(self, block: BlockComparison) -> str:
        """``out0 / weight``."""
        return f"out{block.output} / {self.inputs[block.input].name}"

    @property
    def n_cells(self) -> int:
        return sum(b.analytic.size for b in self.blocks)

    @property
    def n_failing(self) -> int:
        return sum(b.n_failing for b in self.blocks)
