"""The Qt-free figures: the SVG a notebook shows and ``Report.save`` writes draws
its heatmaps cell for cell in librsvg and in Chromium, and names a CSS font stack."""

from __future__ import annotations

from xml.etree import ElementTree

import numpy as np

import gradviz
from gradviz.render.figure import Layout, block_svg, heatmap, levels
from gradviz.render.pooling import pool_max
from gradviz.render.svg_portable import FONT_STACK
from tests.api import functions as f
from tests.svg_renders import chromium_pictures, need_renderers, rsvg, spread

ZOOM = 2
TOP, MAP_LEFT = 58, 10  # where block_svg puts the analytic map (its layout)


def test_block_svg_draws_the_heatmaps_cell_for_cell_outside_qt(tmp_path):
    need_renderers()
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    block = next(b for b in report.result.blocks if not b.passed)
    svg_text = block_svg(report.result, block)
    path = tmp_path / "figure.svg"
    path.write_text(svg_text, encoding="utf-8")
    root = ElementTree.fromstring(svg_text)
    assert root.get("font-family") == FONT_STACK and FONT_STACK.endswith("sans-serif")
    images = [e for e in root.iter() if e.tag.endswith("image")]  # the colour bars
    assert images and all(e.get("image-rendering") == "optimizeSpeed" and "pixelated" in e.get("style") for e in images)
    size = (int(root.get("width")), int(root.get("height")))
    layout = Layout.of(block.shape)
    analytic = heatmap(block, "analytic", layout, levels(block, report.result.settings.atol)["analytic"])
    x, y = MAP_LEFT, TOP
    failing = pool_max(block.failing.astype(np.float32), layout.pool_r, layout.pool_c) > 0
    assert failing.any() and not failing.all()
    outlined = np.repeat(np.repeat(failing, layout.cell_h * ZOOM, axis=0), layout.cell_w * ZOOM, axis=1)
    outlined = spread(outlined, 3 * ZOOM, 3 * ZOOM)  # a 3 px wide outline 1 px outside the cell at most
    outlined[:ZOOM], outlined[-ZOOM:], outlined[:, :ZOOM], outlined[:, -ZOOM:] = True, True, True, True  # the frame
    # zoomed in twice (a HiDPI screen, a reader zooming): each pixel of the map is 2 x 2, not smoothed
    for renderer, picture in (("librsvg", rsvg(path, tmp_path / "figure.png", zoom=ZOOM)),
                              ("Chromium", chromium_pictures([path], size, tmp_path, zoom=ZOOM)[0])):  # fmt: skip
        assert picture.shape[:2] == (size[1] * ZOOM, size[0] * ZOOM), renderer
        drawn = picture[ZOOM * y : ZOOM * (y + layout.height), ZOOM * x : ZOOM * (x + layout.width)].astype(int)
        expected = np.repeat(np.repeat(analytic, ZOOM, axis=0), ZOOM, axis=1).astype(int)
        # the map itself, pixel for pixel, but where the failing cells' outlines are drawn over it
        difference = np.abs(drawn - expected).max(axis=2)[~outlined].max()
        assert difference <= 2, f"{renderer}: the analytic map is {difference} colour levels off (smoothed?)"
