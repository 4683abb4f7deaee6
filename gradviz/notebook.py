"""A check as HTML for Jupyter and Colab: the verdict, the heatmaps with failing cells marked,
the worst cells. No Qt, no display, no torch: ``Report._repr_html_`` calls ``report_html``,
and the sweep ``Report.sweep()`` returns (``gradviz.api.sweep.Sweep``) calls ``sweep_html``.

Every colour is explicit, the background too: the output is one white card with dark text, the
same on a light page and in a dark theme (VS Code, JupyterLab dark), where inherited light text
on our light banners, or dark SVG text on a transparent background, disappeared. Tables get
their colours on every cell, so a theme's striped or hovered rows cannot repaint them.
"""

from __future__ import annotations

from html import escape

from gradviz.render.figure import INK, MUTED, PAPER, block_svg
from gradviz.render.sweep_figure import sweep_svg
from gradviz.schema.mismatch import failing_cells
from gradviz.schema.report import verdict_line
from gradviz.schema.results import WARNED, CheckResult
from gradviz.schema.sweep import SweepResult, Verdict

MAX_FIGURES = 6  # blocks drawn, failing ones first; a notebook output should stay light
WORST_ROWS = 10
PASS_BG, FAIL_BG = "#e3f4e1", "#fbe3e6"
BAD, GOOD, WARN = "#b00020", "#2e7d32", "#8a5a00"  # each at least 4.5:1 on PAPER and on its banner
CELL = 'style="padding:2px 10px;text-align:{align};color:{color};background:{background};border:none"'
CARD = (
    f'style="font-family:sans-serif;font-size:13px;line-height:1.4;color:{INK};background:{PAPER};'
    'padding:8px 10px;border-radius:4px;display:inline-block;max-width:100%;box-sizing:border-box"'
)


def report_html(result: CheckResult, *, figures: int = MAX_FIGURES, worst: int = WORST_ROWS) -> str:
    """The whole report as one HTML fragment with inline SVG figures."""
    s = result.settings
    parts = [
        f'<div class="gradviz-report" {CARD}>',
        _banner(verdict_line(result), result.passed),
        f"<div>{escape(result.function)} on {escape(result.device)}, {escape(result.dtype)} "
        f"(eps={s.eps:g}, atol={s.atol:g}, rtol={s.rtol:g}; gradcheck's rule |a − n| ≤ atol + rtol·|n|)</div>",
        _blocks_table(result),
        *_forward_table(result),
        *_lines(result),
    ]
    ordered = sorted(result.blocks, key=lambda b: b.passed)  # failing blocks first, stable otherwise
    for block in ordered[:figures]:
        parts.append(f"<div>{block_svg(result, block)}</div>")
    if len(ordered) > figures:
        parts.append(
            f"<div><i>{len(ordered) - figures} more block(s) not drawn: report.save(dir) writes all.</i></div>"
        )
    cells = failing_cells(result, worst)
    if cells:
        parts.append(_cells_table(cells))
    parts.append("</div>")
    return "\n".join(parts)


def sweep_html(sweep: SweepResult) -> str:
    """An eps sweep as one card: the verdict and the eps to use, a row per block, the curves."""
    best = f" Suggested eps: {sweep.best_eps:g}." if sweep.best_eps is not None else ""
    head = ["block", "shape", "verdict", "remainder slope", "curvature slope", "best eps"]
    blocks = [*sweep.blocks, sweep.overall]
    rows = [
        [b.title, f"{b.shape[0]}x{b.shape[1]}", b.verdict.headline, _slope(b.remainder_slope),
         _slope(b.curvature_slope), "-" if b.best_eps is None else f"{b.best_eps:g}"]
        for b in blocks
    ]  # fmt: skip
    good = sweep.verdict in (Verdict.BACKWARD_RIGHT, *EPS_VERDICTS)
    parts = [
        f'<div class="gradviz-sweep" {CARD}>',
        _banner(f"{sweep.verdict.headline.upper()}: {sweep.message}{best}", good),
        f"<div>{escape(sweep.function)} on {escape(sweep.device)}, {escape(sweep.dtype)} (check's eps={sweep.eps:g}, "
        f"atol={sweep.atol:g}, rtol={sweep.rtol:g}; {len(sweep.steps)} steps, {sweep.seconds:.2f} s)</div>",
        _table(head, rows, failing=[b.verdict == Verdict.BACKWARD_WRONG for b in blocks]),
        f"<div>{sweep_svg(sweep)}</div>",
        *(f'<div style="color:{MUTED}">Note: {escape(n)}</div>' for n in sweep.notes),
        "</div>",
    ]
    return "\n".join(parts)


EPS_VERDICTS = (Verdict.EPS_TOO_SMALL, Verdict.EPS_TOO_LARGE, Verdict.PRECISION)  # the backward is right


def _slope(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _blocks_table(result: CheckResult) -> str:
    head = ["block", "shape", "max |a − n|", "failing", "worst cell"]
    rows = _block_rows(result, result.blocks, "analytic")
    return _table(head, rows, failing=[not b.passed for b in result.blocks])


def _block_rows(result: CheckResult, blocks: list, first: str) -> list[list[str]]:
    """One row per block; ``first`` names what ``analytic`` holds (the backward's or forward mode's Jacobian)."""
    rows = []
    for b in blocks:
        worst = ""
        if b.worst is not None and not b.passed:
            r, c = b.worst
            worst = f"{result.cell_label(b, r, c)}: {first} {b.analytic[r, c]:.4g}, numerical {b.numerical[r, c]:.4g}"
        rows.append([result.block_title(b), f"{b.shape[0]}x{b.shape[1]}", f"{b.max_abs_error:.3g}", f"{b.n_failing:,}", worst])
    return rows


def _forward_table(result: CheckResult) -> list[str]:
    """check_forward_ad: the forward-mode Jacobian (jvp) against the numerical one, per block."""
    if not result.forward_blocks:
        return []
    head = ["forward-mode block", "shape", "max |f − n|", "failing", "worst cell"]
    rows = _block_rows(result, result.forward_blocks, "forward")
    hints = [
        f"<div><b>Hint</b> (forward mode, {escape(result.block_title(b))}): {escape(h)}</div>"
        for b in result.forward_blocks
        for h in b.hints
    ]
    return [_table(head, rows, failing=[not b.passed for b in result.forward_blocks]), *hints]


def _lines(result: CheckResult) -> list[str]:
    out = []
    for c in result.checks:
        color = BAD if c.failed else WARN if c.status == WARNED else GOOD  # warned: beyond gradcheck (vmap_rule)
        out.append(
            f'<div><span style="color:{color}">{escape(c.name)}: {escape(c.status)}</span> {escape(c.detail)}</div>'
        )
    for b in result.blocks:
        out += [f"<div><b>Hint</b> ({escape(result.block_title(b))}): {escape(h)}</div>" for h in b.hints]
    out += [f'<div style="color:{WARN}"><b>Warning:</b> {escape(w)}</div>' for w in result.warnings]
    out += [f'<div style="color:{MUTED}">Note: {escape(n)}</div>' for n in result.notes]
    return out


def _cells_table(cells) -> str:
    head = ["worst failing cells", "analytic", "numerical", "|a − n|", "allowed"]
    rows = [
        [c.label, f"{c.analytic:.6g}", f"{c.numerical:.6g}", f"{c.error:.3g}", f"{c.allowed:.2g}"]
        for c in cells
    ]
    return _table(head, rows, failing=[True] * len(rows))


def _banner(text: str, good: bool) -> str:
    return (
        f'<div style="background:{PASS_BG if good else FAIL_BG};color:{INK};padding:6px 10px;font-weight:bold">'
        f"{escape(text)}</div>"
    )


def _table(head: list[str], rows: list[list[str]], failing: list[bool]) -> str:
    """Numbers right-aligned; the first column (a label) and the last of text rows left-aligned."""

    def row(values: list[str], tag: str, color: str = INK) -> str:
        cells = []
        for k, v in enumerate(values):
            numeric = (0 < k and v[:1] in "-0123456789") or v in ("nan", "inf")
            style = CELL.format(align="right" if numeric else "left", color=color, background=PAPER)
            cells.append(f"<{tag} {style}>{escape(v)}</{tag}>")
        return f'<tr style="background:{PAPER}">{"".join(cells)}</tr>'

    body = [row(r, "td", BAD if bad else INK) for r, bad in zip(rows, failing)]
    return (
        f'<table style="border-collapse:collapse;margin:6px 0;color:{INK};background:{PAPER}">'
        f'{row(head, "th")}{"".join(body)}</table>'
    )
