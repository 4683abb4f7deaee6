"""An eps sweep as one small SVG: each block's directional Taylor remainder against the step,
log-log, the check's eps marked. The verdict is read from these slopes (2: backward right, 1:
wrong), so the picture shows why; the table next to it gives the numbers.

White paper and dark ink of its own, like every gradviz figure, so it reads in a dark notebook.
"""

from __future__ import annotations

import math
from html import escape

from gradviz.render.figure import INK, MUTED, paper
from gradviz.render.svg_portable import FONT_STACK
from gradviz.schema.sweep import SweepResult

WIDTH, HEIGHT = 460, 230
LEFT, RIGHT, TOP, BOTTOM = 56, 150, 26, 36  # margins: axis labels left and below, the legend right
LINES = ("#1f5fa8", "#b3261e", "#2e7d32", "#6a3d9a", "#8a5a00", "#00707a")  # each >= 4.5:1 on PAPER
MAX_LINES = len(LINES)


def sweep_svg(sweep: SweepResult) -> str:
    """The curves of up to ``MAX_LINES`` blocks (the worst verdicts first) and of the whole Function."""
    blocks = [*sorted(sweep.blocks, key=lambda b: b.verdict.severity)[: MAX_LINES - 1], sweep.overall]
    curves = [(b, _values(b.remainder, sweep.steps)) for b in blocks]
    curves = [(b, v) for b, v in curves if v]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FONT_STACK}" font-size="11" fill="{INK}">',
        paper(WIDTH, HEIGHT),
        f'<text x="{LEFT}" y="15" font-weight="bold">Taylor remainder against the step h (slope 2: right, 1: wrong)</text>',
    ]
    points = [y for _, values in curves for _, y in values]
    if not points:
        parts += [f'<text x="{LEFT}" y="{HEIGHT // 2}" fill="{MUTED}">nothing finite to plot</text>', "</svg>"]
        return "\n".join(parts)
    xs = [math.log10(h) for h in sweep.steps if h > 0]
    x_axis = _Axis(min(xs), max(xs), LEFT, WIDTH - RIGHT)
    y_axis = _Axis(math.log10(min(points)), math.log10(max(points)), HEIGHT - BOTTOM, TOP)
    plot_w, plot_h = WIDTH - RIGHT - LEFT, HEIGHT - BOTTOM - TOP
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#8c8c8c"/>')
    eps_x = x_axis.at(math.log10(sweep.eps))
    parts.append(
        f'<line x1="{eps_x:.1f}" y1="{TOP}" x2="{eps_x:.1f}" y2="{HEIGHT - BOTTOM}" stroke="{MUTED}" '
        f'stroke-dasharray="3,3"/>'
    )
    parts.append(
        f'<text x="{eps_x + 3:.1f}" y="{HEIGHT - BOTTOM - 5}" fill="{MUTED}">check\'s eps {sweep.eps:g}</text>'
    )
    for label, value in ((f"{10 ** x_axis.low:.0e}", x_axis.low), (f"{10 ** x_axis.high:.0e}", x_axis.high)):
        anchor = "start" if value == x_axis.low else "end"
        parts.append(f'<text x="{x_axis.at(value):.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="{anchor}">{label}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 6}" text-anchor="middle">h (log)</text>')
    for value in (y_axis.low, y_axis.high):
        parts.append(
            f'<text x="{LEFT - 4}" y="{y_axis.at(value) + 4:.1f}" text-anchor="end">{10 ** value:.0e}</text>'
        )
    for k, (block, values) in enumerate(curves):
        colour = LINES[k % len(LINES)]
        path = " ".join(f"{x_axis.at(math.log10(h)):.1f},{y_axis.at(math.log10(y)):.1f}" for h, y in values)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        y = TOP + 8 + 15 * k
        parts.append(f'<line x1="{WIDTH - RIGHT + 8}" y1="{y - 4}" x2="{WIDTH - RIGHT + 22}" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{WIDTH - RIGHT + 26}" y="{y}" fill="{colour}">{escape(block.title[:24])}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _values(values: list[float], steps: list[float]) -> list[tuple[float, float]]:
    """(h, value) pairs a log-log plot can show: finite and positive."""
    return [(h, v) for h, v in zip(steps, values) if h > 0 and math.isfinite(v) and v > 0]


class _Axis:
    """A log10 range mapped to pixels; a flat range is widened by one decade each way."""

    def __init__(self, low: float, high: float, start: float, end: float) -> None:
        if high - low < 1e-9:
            low, high = low - 1, high + 1
        self.low, self.high, self.start, self.end = low, high, start, end

    def at(self, value: float) -> float:
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)
