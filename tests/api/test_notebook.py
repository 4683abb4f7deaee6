"""Report._repr_html_ renders without Qt (and ``import gradviz`` without torch): the verdict, three
heatmaps per block with the failing cells marked, and the worst cells."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
import sys
import zlib

import numpy as np
import torch

import gradviz
from gradviz.render.figure import Layout, block_svg, heatmap, levels
from gradviz.render.png import DIVERGING, colorize, encode_png
from tests.api import functions as f
from tests.paths import ROOT

HEADLESS = """
import json, sys
for name in ("PySide6", "shiboken6", "pyqtgraph"):
    sys.modules[name] = None  # importing Qt now raises ImportError
import gradviz
torch_at_import = "torch" in sys.modules
from tests.api import functions as f
report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
bundle = report._repr_mimebundle_()
print(json.dumps({
    "torch_at_import": torch_at_import,
    "html": report._repr_html_(),
    "bundle": sorted(bundle),
    "plain": bundle["text/plain"],
    "worst": [c.label for c in report.worst_cells(10)],
    "failing": {f"{b.output},{b.input}": int(b.n_failing) for b in report.blocks},
}))
"""


def test_html_renders_without_qt_and_shows_the_failing_cells():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    out = subprocess.run(
        [sys.executable, "-c", HEADLESS], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["torch_at_import"] is False  # import gradviz is light: the window's process imports it too
    html = data["html"]
    assert data["bundle"] == ["text/html", "text/plain"] and "FAILED" in data["plain"]
    assert html.count("<svg") == len(data["failing"]) == 2
    assert "FAILED:" in html and "Hint</b> (out0 / u)" in html
    for label in data["worst"]:  # the worst-cells table
        assert f">{label}<" in html
    # every failing cell outlined in each of the three maps, plus the worst cell of each block
    assert html.count('stroke-width="1.5"') == 3 * sum(data["failing"].values())
    assert html.count('stroke-width="3"') == 3 * len(data["failing"])


def read_png(data: bytes) -> np.ndarray:
    """Decode the PNGs encode_png writes (8-bit, filter 0): a check independent of any image library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):  # length, tag, body, crc
        length, tag = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0] == zlib.crc32(tag + body)
        chunks[tag] = chunks.get(tag, b"") + body
        at += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {2: 3, 6: 4}[color]
    idat = chunks[b"IDAT"]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert depth == 8 and not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels)


def test_a_png_holds_exactly_the_colours_of_the_map():
    values = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    values[1, 2] = np.nan
    rgb = colorize(values, (-2.0, 2.0), DIVERGING)
    np.testing.assert_array_equal(read_png(encode_png(rgb)), rgb)
    assert tuple(rgb[0, 0]) == tuple(DIVERGING[0]) and tuple(rgb[2, 3]) == tuple(DIVERGING[-1])
    assert tuple(rgb[1, 2]) == (128, 128, 128)  # NaN is grey


def test_each_heatmap_pixel_block_is_one_cell():
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    block = report.block(0, 0)
    layout = Layout.of(block.shape)
    image = heatmap(block, "analytic", layout, levels(block, 1e-5)["analytic"])
    assert image.shape == (block.shape[0] * layout.cell_h, block.shape[1] * layout.cell_w, 3)
    cells = image[:: layout.cell_h, :: layout.cell_w]
    np.testing.assert_array_equal(cells, colorize(block.analytic, levels(block, 1e-5)["analytic"], DIVERGING))


def test_a_large_or_thin_block_is_pooled_and_its_failures_ticked():
    x = torch.randn(300, dtype=torch.float64, requires_grad=True)
    report = gradviz.check(
        lambda u: f.WrongSign.apply(u, torch.ones_like(u)).sum().reshape(1), x, raise_exception=False
    )
    block = report.blocks[0]
    layout = Layout.of(block.shape)
    assert (layout.pool_r, layout.pool_c) == (1, 2) and layout.height >= 24
    svg = block_svg(report.result, block)
    assert 'stroke-width="1.5"' not in svg  # cells 1 pixel wide: ticks beside the map instead
    images = re.findall(r'xlink:href="data:image/png;base64,([^"]+)"', svg)
    ticks = [read_png(base64.b64decode(i)) for i in images]
    columns = next(t for t in ticks if t.shape[-1] == 4 and t.shape[0] == 4)  # the strip under a map
    failing_pixels = block.failing.reshape(1, -1, 2).any(axis=2)[0]
    np.testing.assert_array_equal(columns[0, :, 3] > 0, np.repeat(failing_pixels, layout.cell_w))
