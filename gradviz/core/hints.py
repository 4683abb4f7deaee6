"""Guess *why* a block fails, from the shape of the disagreement.

Each rule looks for one classic mistake (a dropped transpose, a flipped sign, a wrong
factor, a gradient into entries the forward ignores, a forgotten gradient, a reduction over the
wrong axis, a forgotten term, grad_output ignored, gradients returned in the wrong order) and
says it in one sentence. Every rule reads the two Jacobians only, never the Function's name or
source. They are hints, never verdicts: the failing cells are the facts.
"""

from __future__ import annotations

import numpy as np

from gradviz.schema.indices import format_index
from gradviz.schema.results import BlockComparison

# Hints look at small blocks only; beyond this the extra passes would cost more than they help.
MAX_HINT_CELLS = 4_000_000
# an analytic Jacobian this small next to the numerical one is no gradient, whatever its pattern
ALMOST_ZERO = 1e-9
NO_GRADIENT = (
    "The backward gives no gradient for {in_name} (returned None or zeros), but the output depends on it."
)
ALMOST_NO_GRADIENT = (
    "The backward returns (almost) no gradient for {in_name}: its largest |value| is {largest:.2g}, where the "
    "numerical derivatives reach {numerical:.2g}, but the output depends on {in_name}. Look for a factor that "
    "vanishes (a tiny constant, an underflow, a detached or zeroed term) in the gradient it returns."
)
# the sign hint opens with this, so a complex view can replace it with its own reading (``complex_view``)
SIGN_FLIP = "On every failing cell analytic = -numerical,"
PARTLY_FLIPPED = (
    SIGN_FLIP + " the others agree: a sign(...) factor or a minus is missing for some {in_name} entries (check "
    "abs/sign/relu-like terms)."
)
IGNORES_GRAD_OUTPUT = (
    "Every row of the analytic Jacobian for {in_name} is the same, whichever output entry the gradient "
    "comes from: the backward ignores grad_output (multiply by grad_output, e.g. return grad_output * ...)."
)


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to well within gradcheck's default tolerance (10x atol and rtol)."""
    return bool(np.all(np.abs(a - b) <= 1e-4 + 1e-2 * np.abs(b)))


def diagnose(block: BlockComparison, in_name: str) -> list[str]:
    """One-sentence hints for a failing block; empty when it passes or nothing fits."""
    if block.passed or block.analytic.size > MAX_HINT_CELLS or block.n_nonfinite:
        return []
    a, n = block.analytic, block.numerical
    hints = []
    if not np.any(a) and np.any(n):
        return [NO_GRADIENT.format(in_name=in_name)]
    largest, numerical = float(np.abs(a).max(initial=0.0)), float(np.abs(n).max(initial=0.0))
    if largest <= ALMOST_ZERO * numerical:
        return [ALMOST_NO_GRADIENT.format(in_name=in_name, largest=largest, numerical=numerical)]
    if _rows_all_equal(a, n):
        return [IGNORES_GRAD_OUTPUT.format(in_name=in_name)]
    if np.any(n) and _close(a, -n):
        return ["Analytic = -numerical everywhere: a sign is flipped in the backward."]
    fail = block.failing
    if _close(a[fail], -n[fail]):
        return [PARTLY_FLIPPED.format(in_name=in_name)]
    nn = float(np.vdot(n, n))
    if nn > 0:
        factor = float(np.vdot(a, n)) / nn
        if abs(factor - 1) > 1e-3 and _close(a, factor * n):
            return [
                f"Analytic ≈ {factor:.4g} × numerical everywhere: a constant factor is wrong in the backward."
            ]
    swapped = _axis_swap_hint(block, in_name)
    if swapped:
        return [swapped]
    leak = (n == 0) & (a != 0)
    if np.any(leak) and not np.any(block.failing & ~leak):
        return [
            f"Every failing cell has a numerical derivative of exactly 0: the backward sends gradient into "
            f"{in_name} entries the forward ignores (a mask or slice is missing in backward)."
        ]
    dropped = _dropped_terms(a, n, fail)
    if dropped:
        return [dropped.format(in_name=in_name)]
    varying = _varying_factor(a, n, fail)
    if varying:
        return [varying]
    rows_failing = np.flatnonzero(fail.any(axis=1))
    cols_failing = np.flatnonzero(fail.any(axis=0))
    if len(cols_failing) < fail.shape[1] and len(cols_failing) <= 8:
        names = ", ".join(format_index(in_name, block.cell_index(0, c)[1]) for c in cols_failing)
        hints.append(f"Only some {in_name} entries fail: {names}.")
    elif len(rows_failing) < fail.shape[0] and len(rows_failing) <= 8:
        names = ", ".join(format_index(f"out{block.output}", block.cell_index(r, 0)[0]) for r in rows_failing)
        hints.append(f"Only some output entries fail: {names}.")
    return hints


def diagnose_across(blocks: list[BlockComparison], names: list[str]) -> None:
    """Hints that need two blocks: a gradient that is another input's (returned in the wrong order).

    Replaces a failing block's hints when its analytic Jacobian is the numerical Jacobian of another
    input of the same shape, for the same output.
    """
    for b in blocks:
        if b.passed or b.analytic.size > MAX_HINT_CELLS or b.n_nonfinite or not np.any(b.analytic):
            continue
        for other in blocks:
            if other.output != b.output or other.input == b.input or other.in_shape != b.in_shape:
                continue
            if np.any(other.numerical) and _close(b.analytic, other.numerical):
                b.hints = [
                    f"The gradient returned for {names[b.input]} is the one {names[other.input]} should get: "
                    f"backward returns its gradients in the wrong order (or computes {names[other.input]}'s "
                    f"gradient in {names[b.input]}'s place)."
                ]
                break


def _rows_all_equal(a: np.ndarray, n: np.ndarray) -> bool:
    """Every analytic row the same (the backward's result does not depend on which one-hot
    grad_output it got), while the numerical rows differ."""
    if a.shape[0] < 2 or not np.any(a):
        return False
    same = np.abs(a - a[:1]) <= 1e-12 * np.abs(a).max()  # relative to the block: tiny values are not all equal
    return bool(same.all()) and not _close(n, np.broadcast_to(n[:1], n.shape))


def _dropped_terms(a: np.ndarray, n: np.ndarray, fail: np.ndarray) -> str | None:
    """Every failing cell has analytic 0 where numerical is not, and the nonzero analytic cells are right."""
    scale = float(np.abs(n).max(initial=0.0))
    if not scale:
        return None
    zero = np.abs(a) <= 1e-12 * scale
    if not np.all(zero[fail]) or not np.any(~zero & ~fail):
        return None
    return (
        "On every failing cell the backward gives 0 for {in_name} where the numerical derivative is not, and its "
        "nonzero cells are right: a term is missing, such as the cross terms that couple different entries "
        "(softmax's Jacobian is diag(y) - y·yᵀ, not only its diagonal), or a mask zeroes too much."
    )


def _varying_factor(a: np.ndarray, n: np.ndarray, fail: np.ndarray) -> str | None:
    """Nonzero on the same cells, but the failing cells are off by a factor that changes from cell to cell."""
    scale = float(np.abs(n).max(initial=0.0))
    if not scale:
        return None
    tiny = 1e-9 * scale
    if not np.array_equal(np.abs(a) > tiny, np.abs(n) > tiny):
        return None
    cells = fail & (np.abs(n) > tiny)
    if not np.any(cells):
        return None
    ratio = a[cells] / n[cells]
    low, high = float(ratio.min()), float(ratio.max())
    if high - low <= 1e-3 * max(abs(low), abs(high)):
        return None  # a constant factor: said by the factor rule
    return (
        f"Nonzero on the right cells, but the failing ones are off by a factor that changes from cell to cell "
        f"(analytic / numerical from {low:.3g} to {high:.3g}): a term is missing or wrong, e.g. one half of the "
        f"product rule d(u·v) = du·v + u·dv, or a derivative written with the wrong variable (1 - y where 1 - y² "
        f"belongs)."
    )


def _axis_swap_hint(block: BlockComparison, in_name: str) -> str | None:
    """A transposition that maps the numerical Jacobian onto the analytic one, in words.

    The block is viewed as a tensor over (output axes..., input axes...). Swapping two axes of
    equal size covers a transposed gradient (two input axes), grad_output used transposed or
    reduced over the wrong axis (two output axes), and a transposed factor inside the backward
    (an output axis with an input axis, e.g. W.t() for W). A gradient computed transposed and
    reshaped back to a non-square input's shape permutes the columns instead; checked too.
    """
    a, n = block.analytic, block.numerical
    out_shape, in_shape = tuple(block.out_shape), tuple(block.in_shape)
    if len(in_shape) >= 2 and in_shape[-1] != in_shape[-2]:
        if _close(a, n[:, _transposed_order(in_shape)]):
            return (
                f"The gradient for {in_name} matches the numerical one transposed and reshaped back to "
                f"{in_name}'s shape {in_shape}: a .t() (or .transpose) is missing or extra before the reshape."
            )
    if len(out_shape) >= 2 and out_shape[-1] != out_shape[-2]:
        if _close(a, n[_transposed_order(out_shape), :]):
            return (
                "The analytic Jacobian matches the numerical one with grad_output transposed and reshaped back: "
                "a .t() is missing or extra on grad_output."
            )
    shape = out_shape + in_shape
    if len(shape) < 2 or a.size != int(np.prod(shape)):
        return None
    ta, tn = a.reshape(shape), n.reshape(shape)
    n_out = len(out_shape)
    for p in range(len(shape)):
        for q in range(p + 1, len(shape)):
            if shape[p] != shape[q] or shape[p] < 2:
                continue
            swapped = np.swapaxes(tn, p, q)
            if _close(swapped, tn) or not _close(ta, swapped):  # a swap that changes nothing explains nothing
                continue
            if p >= n_out:
                return (
                    f"The gradient for {in_name} matches the numerical one with {in_name}'s axes {p - n_out} and "
                    f"{q - n_out} swapped: a .t() (or .transpose) is missing or extra."
                )
            if q < n_out:
                if _close(tn, np.broadcast_to(tn.mean(axis=p, keepdims=True), tn.shape)):
                    return (
                        f"The gradient for {in_name} reduces grad_output over the wrong axis: the forward "
                        f"broadcasts {in_name} along output axis {p}, so the backward must sum over dim {p}, not "
                        f"dim {q} (e.g. grad_output.sum({p}) instead of .sum({q})); the shapes only agree because "
                        f"both axes have size {shape[p]}."
                    )
                return (
                    f"The gradient for {in_name} matches the numerical one with output axes {p} and {q} swapped: "
                    "grad_output is used transposed (a .t() on grad_output is missing or extra)."
                )
            return (
                f"The gradient for {in_name} matches the numerical one with output axis {p} and {in_name} axis "
                f"{q - n_out} swapped: a factor in the backward is transposed (e.g. W.t() where W belongs); "
                f"the shapes only agree because both axes have size {shape[p]}."
            )
    return None


def _transposed_order(shape: tuple[int, ...]) -> np.ndarray:
    """Flat positions a tensor's values take when its last two axes are transposed and the result
    is read back (C order) in the original shape."""
    *lead, m, k = shape
    order = np.arange(int(np.prod(shape))).reshape(*lead, m, k)
    return np.swapaxes(order, -1, -2).reshape(-1)
