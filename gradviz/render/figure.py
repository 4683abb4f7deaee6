"""One block as the window shows it: analytic | numerical | error, failing cells outlined in red.

An SVG (text, outlines, colour bars) around the heatmaps: one rectangle per run of equal cells
(a PNG for maps of more than 64x64 pooled cells). It renders inline in Jupyter, Colab, browsers
and librsvg, and scales without blurring the cells. Analytic and numerical share one colour
scale, symmetric about zero, so equal colours are equal values; the error map has its own.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from html import escape

import numpy as np

from gradviz.render.png import DIVERGING, SEQUENTIAL, colorize, encode_png, enlarge
from gradviz.render.pooling import Levels, pooled_map
from gradviz.render.svg_portable import CELLS_GROUP, FONT_STACK, IMAGE_STYLE, cell_rects
from gradviz.schema.results import BlockComparison, CheckResult

TITLES = {
    "analytic": "Analytic (backward)",
    "numerical": "Numerical (finite diff.)",
    "error": "Error |A − N|",
}
KINDS = tuple(TITLES)
PANEL = 240  # pixels: the longer side of a heatmap at most
MAX_CELL = 24  # pixels: a cell at most this big (a 2x2 block stays small)
MIN_SIDE = 24  # pixels: a 1 x 300 block is still a visible strip
SLOT = 170  # pixels: a panel's column is at least this wide (room for its title)
RECT_CELLS = 64 * 64  # a map of at most this many (pooled) cells is drawn as rectangles, not a PNG
OUTLINE_LIMIT = 300  # failing (pooled) cells outlined one by one; more are ticked beside the map
MIN_OUTLINED = 4  # pixels: smaller cells get ticks too (an outline would hide them)
TICK = 4  # pixels: the red ticks beside a map at its failing rows and columns
FAIL = "#e6143c"
# Every figure carries its own white paper and dark ink: a notebook in a dark theme (VS Code,
# JupyterLab dark) shows a transparent SVG on #1e1e1e, where dark text disappears. The notebook
# HTML uses the same pair, so a report reads as one card on any page.
PAPER = "#ffffff"
INK = "#222222"
MUTED = "#595959"  # secondary text: 7:1 on PAPER


@dataclass
class Layout:
    """How a block's cells map to pixels: ``pool_r`` x ``pool_c`` cells per pixel, then enlarged."""

    pool_r: int
    pool_c: int
    rows: int
    cols: int
    cell_h: int
    cell_w: int

    @classmethod
    def of(cls, shape: tuple[int, int]) -> Layout:
        pool_r, pool_c = max(1, math.ceil(shape[0] / PANEL)), max(1, math.ceil(shape[1] / PANEL))
        rows, cols = math.ceil(shape[0] / pool_r), math.ceil(shape[1] / pool_c)
        side = max(1, min(MAX_CELL, PANEL // max(rows, cols)))
        cell_h = min(MAX_CELL, max(side, math.ceil(MIN_SIDE / rows)))
        cell_w = min(MAX_CELL, max(side, math.ceil(MIN_SIDE / cols)))
        return cls(pool_r, pool_c, rows, cols, cell_h, cell_w)

    @property
    def width(self) -> int:
        return self.cols * self.cell_w

    @property
    def height(self) -> int:
        return self.rows * self.cell_h


def levels(block: BlockComparison, atol: float) -> dict[str, tuple[float, float]]:
    """Each map's explicit levels, the window's (``gradviz.render.pooling.Levels``): values
    symmetric about zero over both maps; errors from 0 to the largest finite error (at least atol)."""
    level = Levels.of(block, atol)
    return {"analytic": level.value, "numerical": level.value, "error": level.error}


def heatmap(block: BlockComparison, kind: str, layout: Layout, level: tuple[float, float]) -> np.ndarray:
    """The enlarged RGB image of one map (an infinite error shows as the top colour)."""
    return enlarge(cell_colours(block, kind, layout, level), layout.cell_h, layout.cell_w)


def cell_colours(block: BlockComparison, kind: str, layout: Layout, level: tuple[float, float]) -> np.ndarray:
    """One RGB colour per (pooled) cell of one map."""
    pooled = pooled_map(block, kind, level[1], layout.pool_r, layout.pool_c)
    table = SEQUENTIAL if kind == "error" else DIVERGING
    return colorize(pooled, level, table)


def heatmap_png(result: CheckResult, block: BlockComparison, kind: str) -> bytes:
    """One map as a PNG file's bytes (for ``Report.save``)."""
    layout = Layout.of(block.shape)
    return encode_png(heatmap(block, kind, layout, levels(block, result.settings.atol)[kind]))


def block_svg(result: CheckResult, block: BlockComparison) -> str:
    """The three maps of one block side by side, failing cells marked, two colour bars."""
    layout = Layout.of(block.shape)
    level = levels(block, result.settings.atol)
    slot = max(SLOT, layout.width + 10)
    top = 58
    width, height = 3 * slot + 10, top + layout.height + 44
    failing = pooled_map(block, "failing", level["error"][1], layout.pool_r, layout.pool_c) > 0
    marks = _marks(failing, layout, block, top)
    title, detail = _caption(result, block)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{FONT_STACK}" '
        f'font-size="12" fill="{INK}">',
        paper(width, height),
        f'<text x="10" y="14" font-weight="bold">{escape(title)}</text>',
        f'<text x="10" y="29" font-size="11" fill="{MUTED}">{escape(detail)}</text>',
    ]
    for k, kind in enumerate(KINDS):
        x = 10 + k * slot
        parts.append(f'<text x="{x}" y="{top - 8}">{TITLES[kind]}</text>')
        parts.append(_map(cell_colours(block, kind, layout, level[kind]), layout, x, top))
        parts.append(
            f'<rect x="{x}" y="{top}" width="{layout.width}" height="{layout.height}" fill="none" stroke="#999"/>'
        )
        parts.append(_shift(marks, x))
    bar_y = top + layout.height + 4 + TICK
    parts.append(_colorbar(DIVERGING, level["analytic"], 10, bar_y, 2 * slot - 20, "analytic and numerical"))
    parts.append(_colorbar(SEQUENTIAL, level["error"], 10 + 2 * slot, bar_y, slot - 20, "|A − N|"))
    parts.append("</svg>")
    return "\n".join(parts)


def paper(width: float, height: float) -> str:
    """The figure's own background, first in the SVG: its text never depends on the page's colour."""
    return f'<rect x="0" y="0" width="{width}" height="{height}" fill="{PAPER}" stroke="none"/>'


def _caption(result: CheckResult, block: BlockComparison) -> tuple[str, str]:
    """``out0 / x: 12x12, 7 failing`` and what rows, columns and pixels are."""
    layout = Layout.of(block.shape)
    state = "passes" if block.passed else f"{block.n_failing:,} failing"
    pooled = (
        f"; one pixel shows {layout.pool_r}x{layout.pool_c} cells"
        if layout.pool_r * layout.pool_c > 1
        else ""
    )
    detail = f"rows: out{block.output} elements, columns: {result.inputs[block.input].name} elements{pooled}"
    return f"{result.block_title(block)}: {block.shape[0]}x{block.shape[1]}, {state}", detail


def _marks(failing: np.ndarray, layout: Layout, block: BlockComparison, top: int) -> str:
    """Outlines of the failing cells (drawn at x = 0, shifted per panel); when they are too many or
    too small to outline, red ticks beside the map at the failing rows and columns instead."""
    rows, cols = np.nonzero(failing)
    if not len(rows):
        return ""
    w, h = layout.cell_w, layout.cell_h
    if len(rows) > OUTLINE_LIMIT or min(w, h) < MIN_OUTLINED:
        red = np.array([230, 20, 60, 255], np.uint8)
        across = np.zeros((1, layout.cols, 4), np.uint8)
        across[0, failing.any(axis=0)] = red
        down = np.zeros((layout.rows, 1, 4), np.uint8)
        down[failing.any(axis=1), 0] = red
        return "\n".join(
            [
                _image(encode_png(enlarge(across, TICK, w)), 0, top + layout.height + 1, layout.width, TICK),
                _image(encode_png(enlarge(down, h, TICK)), -TICK - 1, top, TICK, layout.height),
            ]
        )
    rects = [
        f'<rect x="{c * w}" y="{top + r * h}" width="{w}" height="{h}" fill="none" stroke="{FAIL}" stroke-width="1.5"/>'
        for r, c in zip(rows, cols)
    ]
    if block.worst is not None:
        r, c = block.worst[0] // layout.pool_r, block.worst[1] // layout.pool_c
        rects.append(
            f'<rect x="{c * w - 1}" y="{top + r * h - 1}" width="{w + 2}" height="{h + 2}" fill="none" '
            f'stroke="{FAIL}" stroke-width="3"/>'
        )
    return "\n".join(rects)


def _shift(marks: str, x: int) -> str:
    return f'<g transform="translate({x},0)">{marks}</g>' if marks else ""


def _map(colours: np.ndarray, layout: Layout, x: int, y: int) -> str:
    """A map as rectangles (sharp in every renderer and at any zoom: librsvg smooths a scaled
    image whatever its image-rendering), or as a PNG when it has too many cells for that."""
    if colours.shape[0] * colours.shape[1] > RECT_CELLS:
        png = encode_png(enlarge(colours, layout.cell_h, layout.cell_w))
        return _image(png, x, y, layout.width, layout.height)
    attributes = " ".join(f'{k}="{v}"' for k, v in CELLS_GROUP.items())
    rects = (
        "<rect " + " ".join(f'{k}="{v}"' for k, v in rect.items()) + "/>"
        for rect in cell_rects(colours, x, y, layout.cell_w, layout.cell_h)
    )
    return f"<g {attributes}>{''.join(rects)}</g>"


def _image(png: bytes, x: int, y: int, width: int, height: int) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<image x="{x}" y="{y}" width="{width}" height="{height}" preserveAspectRatio="none" '
        f'image-rendering="optimizeSpeed" style="{IMAGE_STYLE}" xlink:href="data:image/png;base64,{data}"/>'
    )


def _colorbar(table: np.ndarray, level: tuple[float, float], x: int, y: int, width: int, label: str) -> str:
    strip = enlarge(table[np.newaxis, :, :], 10, 1)
    low, high = level
    return "\n".join(
        [
            _image(encode_png(strip), x, y, width, 10),
            f'<text x="{x}" y="{y + 24}">{low:.3g}</text>',
            f'<text x="{x + width}" y="{y + 24}" text-anchor="end">{high:.3g}</text>',
            f'<text x="{x + width / 2:.0f}" y="{y + 24}" text-anchor="middle">{escape(label)}</text>',
        ]
    )
