"""The notebook view reads on a light page and on a dark one (VS Code, JupyterLab dark).

Two ways: every piece of text has a colour of its own that contrasts (WCAG 4.5:1 at least) with
a background of its own, in the HTML and in each SVG, read from the markup; and Chromium renders
the report and the sweep into a white page and into a dark theme's page (#1e1e1e, light inherited
text, striped dark table rows, as JupyterLab dark styles tables), where the card must look the
same and hold dark text on light paper.
"""

from __future__ import annotations

import os
import re
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import gradviz
from gradviz.notebook import report_html, sweep_html
from gradviz.render.figure import block_svg
from gradviz.render.sweep_figure import sweep_svg
from tests.api import functions as f
from tests.svg_renders import TIMEOUT, chromium, need_renderers, read_png

MIN_CONTRAST = 4.5  # WCAG AA for normal text
SVG = "{http://www.w3.org/2000/svg}"
DARK_THEME = (  # what a dark notebook theme does to an output: page, inherited text, table rows
    "body{background:#1e1e1e;color:#d4d4d4}"
    "table{color:#d4d4d4}td,th{color:#d4d4d4}tr:nth-child(odd){background:#2b2b2b}tr:hover{background:#383838}"
)
LIGHT_THEME = "body{background:#ffffff;color:#000000}"


@pytest.fixture(scope="module")
def outputs():
    """(report, sweep) of a failing check: red rows, warnings, hints, ticks and all."""
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    return report, report.sweep()


def luminance(colour: str) -> float:
    """WCAG relative luminance of #rgb or #rrggbb."""
    hex_digits = colour.lstrip("#")
    if len(hex_digits) == 3:
        hex_digits = "".join(c * 2 for c in hex_digits)
    channels = [int(hex_digits[k : k + 2], 16) / 255 for k in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def svg_text_contrasts(svg: str) -> list[tuple[str, float]]:
    """(text, contrast with the figure's own background) for every <text>; the background is the
    first element, a rectangle over the whole figure (an SVG without one has none: the page's)."""
    root = ET.fromstring(svg)
    first = root[0]
    width, height = root.get("width"), root.get("height")
    has_paper = (
        first.tag == f"{SVG}rect"
        and first.get("x", "0") == first.get("y", "0") == "0"
        and (first.get("width"), first.get("height")) == (width, height)
        and first.get("fill", "none") not in ("none", "transparent")
    )
    assert has_paper, "the SVG has no background of its own: its text takes whatever page it lands on"
    paper = first.get("fill")
    found = []

    def walk(element: ET.Element, fill: str) -> None:
        fill = element.get("fill", fill)
        if element.tag == f"{SVG}text":
            found.append(("".join(element.itertext()), contrast(fill, paper)))
        for child in element:
            walk(child, fill)

    walk(root, "#000000")
    return found


class _Colours(HTMLParser):
    """Each text run of an HTML fragment with the colour and background it gets from the markup
    alone (inline styles, inherited); None where nothing in the fragment sets one. SVGs skipped."""

    VOID = frozenset({"br", "img", "hr", "meta", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, str | None, str | None]] = [("", None, None)]
        self.in_svg = 0
        self.runs: list[tuple[str, str | None, str | None]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "svg" or self.in_svg:
            self.in_svg += 1
            return
        style = dict(attrs).get("style") or ""
        _, colour, background = self.stack[-1]
        colour = _style(style, "color") or colour
        background = _style(style, "background") or background
        if tag not in self.VOID:
            self.stack.append((tag, colour, background))

    def handle_endtag(self, tag):
        if self.in_svg:
            self.in_svg -= 1
            return
        if tag not in self.VOID and len(self.stack) > 1:
            self.stack.pop()

    def handle_data(self, data):
        if data.strip() and not self.in_svg:
            _, colour, background = self.stack[-1]
            self.runs.append((data.strip(), colour, background))


def _style(style: str, name: str) -> str | None:
    match = re.search(rf"(?:^|;)\s*{name}\s*:\s*(#[0-9a-fA-F]{{3,6}})\b", style)
    return match.group(1) if match else None


def html_text_runs(html: str) -> list[tuple[str, str | None, str | None]]:
    parser = _Colours()
    parser.feed(html)
    return parser.runs


@pytest.mark.parametrize("which", ["report", "sweep"])
def test_every_text_in_the_html_has_its_own_colour_and_background_that_contrast(outputs, which):
    report, sweep = outputs
    html = report_html(report.result) if which == "report" else sweep_html(sweep)
    runs = html_text_runs(html)
    assert len(runs) > 10
    inherited = [text for text, colour, background in runs if colour is None or background is None]
    assert not inherited, f"text that takes the page's colours: {inherited[:5]}"
    low = [(text, round(contrast(c, b), 2)) for text, c, b in runs if contrast(c, b) < MIN_CONTRAST]
    assert not low, low[:5]


def test_every_svg_text_contrasts_with_the_figures_own_background(outputs):
    report, sweep = outputs
    svgs = [block_svg(report.result, block) for block in report.blocks] + [sweep_svg(sweep)]
    for svg in svgs:
        texts = svg_text_contrasts(svg)
        assert len(texts) >= 6
        low = [(text, round(ratio, 2)) for text, ratio in texts if ratio < MIN_CONTRAST]
        assert not low, low


def test_sweep_result_shows_as_a_compact_card_in_a_notebook(outputs):
    _, sweep = outputs
    html = sweep._repr_html_()
    assert html.startswith('<div class="gradviz-sweep"') and html == sweep_html(sweep)
    assert len(html.encode()) < 20_000 < len(repr(sweep).encode()) * 2
    assert sweep.verdict.headline.upper() in html and "<svg" in html
    for block in [*sweep.blocks, sweep.overall]:
        assert f">{block.title}<" in html and f"{block.remainder_slope:.2f}" in html


def screenshot(html: str, theme: str, folder: Path, name: str, size: tuple[int, int]) -> np.ndarray:
    page = folder / f"{name}.html"
    page.write_text(
        f'<!doctype html><html><head><meta charset="utf-8"><style>{theme}</style></head>'
        f'<body style="margin:0;padding:20px">{html}</body></html>',
        encoding="utf-8",
    )
    shot = folder / f"{name}.png"
    command = [chromium(), "--headless", "--hide-scrollbars", "--disable-gpu", f"--screenshot={shot}",
               f"--window-size={size[0]},{size[1]}", page.as_uri()]  # fmt: skip
    if os.geteuid() == 0:  # Chromium's sandbox refuses root
        command.insert(1, "--no-sandbox")
    subprocess.run(command, check=True, timeout=TIMEOUT, capture_output=True)
    return read_png(shot).astype(np.int16)


def test_the_card_looks_the_same_on_a_light_and_a_dark_page_in_chromium(outputs, tmp_path):
    need_renderers()
    report, sweep = outputs
    html = report_html(report.result) + "<br>" + sweep_html(sweep)
    size = (1000, 1900)
    light = screenshot(html, LIGHT_THEME, tmp_path, "light", size)
    dark = screenshot(html, DARK_THEME, tmp_path, "dark", size)
    page = np.array([0x1E, 0x1E, 0x1E])
    drawn = np.any(np.abs(dark - page) > 8, axis=2)
    rows, cols = np.nonzero(drawn)
    top, bottom, left, right = rows.min(), rows.max(), cols.min(), cols.max()
    assert bottom - top > 800 and right - left > 500, "the report and the sweep are drawn"
    inner = (slice(top + 6, bottom - 6), slice(left + 6, right - 6))  # rounded corners blend with the page
    differs = np.any(np.abs(light[inner] - dark[inner]) > 24, axis=2)
    assert differs.mean() < 0.002, f"{differs.sum()} pixels of the output change with the page's theme"
    # and there is text in it: dark ink on light paper, in the banner and under the figures
    grey = dark[inner].mean(axis=2)
    assert (grey > 200).mean() > 0.5 and (grey < 90).sum() > 5000
