"""A check as HTML for Jupyter and Colab: the verdict, the heatmaps with failing cells marked,
the worst cells. No Qt, no display, no torch: ``Report._repr_html_`` calls ``report_html``.
"""

from __future__ import annotations

from html import escape

from gradviz.render.figure import block_svg
from gradviz.schema.mismatch import failing_cells
from gradviz.schema.report import verdict_line
from gradviz.schema.results import CheckResult

MAX_FIGURES = 6  # blocks drawn, failing ones first; a notebook output should stay light
WORST_ROWS = 10
PASS_BG, FAIL_BG = "#e3f4e1", "#fbe3e6"
CELL = 'style="padding:2px 10px;text-align:{align}"'


def report_html(result: CheckResult, *, figures: int = MAX_FIGURES, worst: int = WORST_ROWS) -> str:
    """The whole report as one HTML fragment with inline SVG figures."""
    s = result.settings
    parts = [
        '<div class="gradviz-report" style="font-family:sans-serif;font-size:13px;line-height:1.4">',
        f'<div style="background:{PASS_BG if result.passed else FAIL_BG};padding:6px 10px;font-weight:bold">'
        f"{escape(verdict_line(result))}</div>",
        f"<div>{escape(result.function)} on {escape(result.device)}, {escape(result.dtype)} "
        f"(eps={s.eps:g}, atol={s.atol:g}, rtol={s.rtol:g}; gradcheck's rule |a − n| ≤ atol + rtol·|n|)</div>",
        _blocks_table(result),
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


def _blocks_table(result: CheckResult) -> str:
    head = ["block", "shape", "max |a − n|", "failing", "worst cell"]
    rows = []
    for b in result.blocks:
        worst = ""
        if b.worst is not None and not b.passed:
            r, c = b.worst
            worst = f"{result.cell_label(b, r, c)}: analytic {b.analytic[r, c]:.4g}, numerical {b.numerical[r, c]:.4g}"
        rows.append(
            [
                result.block_title(b),
                f"{b.shape[0]}x{b.shape[1]}",
                f"{b.max_abs_error:.3g}",
                f"{b.n_failing:,}",
                worst,
            ]
        )
    return _table(head, rows, failing=[not b.passed for b in result.blocks])


def _lines(result: CheckResult) -> list[str]:
    out = []
    for c in result.checks:
        color = "#b00020" if c.failed else "#2e7d32"
        out.append(
            f'<div><span style="color:{color}">{escape(c.name)}: {escape(c.status)}</span> {escape(c.detail)}</div>'
        )
    for b in result.blocks:
        out += [f"<div><b>Hint</b> ({escape(result.block_title(b))}): {escape(h)}</div>" for h in b.hints]
    out += [f'<div style="color:#8a5a00"><b>Warning:</b> {escape(w)}</div>' for w in result.warnings]
    out += [f'<div style="color:#555">Note: {escape(n)}</div>' for n in result.notes]
    return out


def _cells_table(cells) -> str:
    head = ["worst failing cells", "analytic", "numerical", "|a − n|", "allowed"]
    rows = [
        [c.label, f"{c.analytic:.6g}", f"{c.numerical:.6g}", f"{c.error:.3g}", f"{c.allowed:.2g}"]
        for c in cells
    ]
    return _table(head, rows, failing=[True] * len(rows))


def _table(head: list[str], rows: list[list[str]], failing: list[bool]) -> str:
    """Numbers right-aligned; the first column (a label) and the last of text rows left-aligned."""

    def row(values: list[str], tag: str, style: str = "") -> str:
        cells = []
        for k, v in enumerate(values):
            numeric = (0 < k and v[:1] in "-0123456789") or v in ("nan", "inf")
            cells.append(f"<{tag} {CELL.format(align='right' if numeric else 'left')}>{escape(v)}</{tag}>")
        return f"<tr{style}>{''.join(cells)}</tr>"

    body = [row(r, "td", ' style="color:#b00020"' if bad else "") for r, bad in zip(rows, failing)]
    return f'<table style="border-collapse:collapse;margin:6px 0">{row(head, "th")}{"".join(body)}</table>'
