"""A rectangle of a Jacobian block too large to hold, every cell computed exactly.

A large block is searched without being built (``gradviz.core.large``); the window then asks
for the cells around what the search found. Rows r0..r1 of the analytic side are one backward
each with a one-hot grad_output (gradcheck's analytical rows), kept at columns c0..c1 only;
columns c0..c1 of the numerical side are central differences in the output's dtype (gradcheck's
numerical columns), kept at rows r0..r1 only. Both are compared by gradcheck's rule
``|a - n| <= atol + rtol * |n|``. Nothing larger than (region rows x input numel) + (output numel
x region columns) is held, and every value user code returns is copied before the next call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from gradviz.core.compare import compare_block
from gradviz.core.complex_view import RealView, outputs_need_real_view, real_view
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import CancelFn, Progress, ProgressFn, call_apply, vjp_rows
from gradviz.core.loader import LoadedSource
from gradviz.core.numerical_jacobian import ColumnFiller
from gradviz.core.prepare import prepare_source
from gradviz.core.user_code import CodeFiles, backward_error, first_forward
from gradviz.schema.errors import Cancelled, ErrorKind, GradvizError, SettingsError, SizeLimitError
from gradviz.schema.results import MAX_REGION_SIDE, BlockRegion
from gradviz.schema.settings import CheckSettings, Tolerance

STEP = 16  # rows or columns between progress reports


def check_region(block: tuple[int, int], rows: range, cols: range, title: str = "the block") -> None:
    """Refuse a region that is empty, leaves the block or is larger than MAX_REGION_SIDE a side."""
    n_rows, n_cols = block
    for what, span, size in (("rows", rows, n_rows), ("columns", cols, n_cols)):
        if len(span) > MAX_REGION_SIDE:
            raise SizeLimitError(
                f"A region of {len(rows):,} × {len(cols):,} cells is too large to compute cell by cell: at most "
                f"{MAX_REGION_SIDE} rows and {MAX_REGION_SIDE} columns. Ask for a smaller region."
            )
        if len(span) == 0 or span.start < 0 or span.stop > size:
            raise SettingsError(
                f"{what.capitalize()} {span.start}..{span.stop - 1} are not inside {title}, whose {what} are "
                f"0..{size - 1}: choose a region inside it."
            )


def region_rows(out: torch.Tensor, leaf: torch.Tensor, rows: range, cols: range, progress: Progress) -> np.ndarray:
    """Analytic cells: one backward per row (one-hot grad_output, as gradcheck), kept at ``cols``."""
    kept = np.empty((len(rows), len(cols)))
    buffer = np.empty((min(STEP, len(rows)), leaf.numel()))  # a few whole rows at a time
    for k0 in range(0, len(rows), STEP):
        k1 = min(len(rows), k0 + STEP)
        vjp_rows(out, [leaf], rows[k0:k1], [buffer], progress, at=range(k1 - k0))
        kept[k0:k1] = buffer[: k1 - k0, cols.start : cols.stop]
        progress.advance(k1 - k0)
    return kept


def region_columns(
    apply: Callable, args: Sequence, i: int, j: int, rows: range, cols: range, *, eps: float, clone_inputs: bool,
    progress: Progress,
) -> np.ndarray:
    """Numerical cells: ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)`` in output i's dtype, kept at ``rows``."""
    kept = np.empty((len(rows), len(cols)))
    with torch.enable_grad():  # the forwards run as gradcheck runs them
        reference = tuple(
            o.detach().clone() if isinstance(o, torch.Tensor) else o for o in call_apply(apply, args, clone=True)
        )
        columns = ColumnFiller(apply, args, j, reference, [i], eps, clone_inputs)
        for k0 in range(0, len(cols), STEP):
            k1 = min(len(cols), k0 + STEP)
            diffs = columns.looped(cols[k0:k1], progress)[i]  # (k1 - k0, out numel), owned copies
            diffs.div_(2 * eps)  # in the output's dtype, as gradcheck divides
            kept[:, k0:k1] = diffs[:, rows.start : rows.stop].T.to(torch.float64).cpu().numpy()
            progress.advance(k1 - k0)
    return kept


def region_of_source(
    loaded: LoadedSource,
    function: str | None,
    settings: CheckSettings,
    block: tuple[int, int],
    rows: range,
    cols: range,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> BlockRegion:
    """A region of block ``(output, input)`` at the very inputs ``check_source`` checks with these settings."""
    prepared = prepare_source(loaded, function, settings)
    return region_of_function(
        prepared.fn, prepared.inputs, settings, block, rows, cols, loaded=loaded, progress=progress, cancel=cancel
    )


def region_of_function(
    fn: type[torch.autograd.Function],
    inputs: PreparedInputs,
    settings: CheckSettings,
    block: tuple[int, int],
    rows: range,
    cols: range,
    *,
    loaded: LoadedSource | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> BlockRegion:
    """Rows ``rows`` by columns ``cols`` of block ``(output i, input j)`` of ``fn`` at ``inputs``."""
    fn, inputs = real_view(fn, inputs)  # complex inputs and outputs as check_function sees them
    code = CodeFiles(fn, loaded)
    outputs, mutates, _, _ = first_forward(fn, inputs.args, code)
    if outputs_need_real_view(outputs):
        fn = RealView(fn, frozenset())
        outputs, mutates, _, _ = first_forward(fn, inputs.args, code)
    i, j = block
    args = inputs.args
    out = outputs[i] if 0 <= i < len(outputs) else None
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        raise SettingsError(f"Output {i} of {fn.__name__} is not a differentiable tensor: it has no Jacobian rows.")
    if j not in inputs.grad_indices:
        raise SettingsError(f"Argument {j} of {fn.__name__} is not a tensor that requires grad: it has no Jacobian columns.")
    title = f"block out{i} / {inputs.names[j]} ({out.numel():,} × {args[j].numel():,})"
    check_region((out.numel(), args[j].numel()), rows, cols, title)
    tracker = Progress(len(rows) + len(cols), progress, cancel)
    try:
        numerical = region_columns(
            fn.apply, args, i, j, rows, cols, eps=settings.eps, clone_inputs=mutates, progress=tracker
        )
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        raise code.error(ErrorKind.FORWARD, exc, f"{fn.__name__}.forward (on inputs perturbed by ±eps)") from None
    try:
        analytic = region_rows(out, args[j], rows, cols, tracker)
    except (GradvizError, Cancelled):
        raise
    except (Exception, SystemExit) as exc:
        raise backward_error(fn, exc, loaded, code, inputs.names, (out,)) from None
    tol: Tolerance = settings.tolerance()
    compared = compare_block(
        i, j, tuple(out.shape), tuple(args[j].shape), analytic, numerical, tol,
        compute_dtype=torch.promote_types(args[j].dtype, out.dtype),
    )  # fmt: skip
    return BlockRegion(rows.start, cols.start, compared)
