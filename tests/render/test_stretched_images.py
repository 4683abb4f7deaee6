"""A pooled heatmap drawn stretched in an exported SVG (more figure pixels than image pixels) stays
crisp in librsvg: ``portable_svg`` puts it on the figure's pixel grid, each pixel the cell under
its centre. Checked against a nearest-cell picture computed here point by point, and in
librsvg itself."""

from __future__ import annotations

import base64
import shutil
import struct
import zlib
from xml.etree import ElementTree

import numpy as np
import pytest

from gradviz.render.png import encode_png
from gradviz.render.svg_portable import apply, invert, multiply, parse_transform, portable_svg

SVG_NS = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
WIDTH, HEIGHT = 720, 480
ROWS, COLS = 150, 200  # more than 128x128 pixels: too many to become rectangles
# pyqtgraph's data-to-pixel transform: a fractional scale, y flipped, a fractional offset
PARENT = "matrix(2.37,0,0,-1.91,31.6,402.3)"


def picture(seed: int = 0) -> np.ndarray:
    """ROWS x COLS RGBA cells of random opaque colours: every neighbour differs."""
    rng = np.random.default_rng(seed)
    rgba = rng.integers(0, 256, size=(ROWS, COLS, 4), dtype=np.uint8)
    rgba[..., 3] = 255
    return rgba


def qt_like_svg(pixels: np.ndarray) -> str:
    """A document shaped like QSvgGenerator's: the image in its cells' units under ``PARENT``."""
    data = base64.b64encode(encode_png(pixels)).decode("ascii")
    return (
        f'<svg width="190mm" height="127mm" viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg" '
        f'xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1"><g transform="{PARENT}">'
        f'<image x="0" y="0" width="{COLS}" height="{ROWS}" preserveAspectRatio="none" '
        f'xlink:href="data:image/png;base64,{data}"/></g></svg>'
    )


def decode_own_png(data: bytes) -> np.ndarray:
    """The pixels of a PNG written by ``encode_png`` (8-bit RGBA, filter 0 on every line)."""
    width, height = struct.unpack(">II", data[16:24])
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        if data[at + 4 : at + 8] == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + length])
        at += 12 + length
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), np.uint8).reshape(height, 1 + width * 4)
    return raw[:, 1:].reshape(height, width, 4)


def nearest_cells(pixels: np.ndarray) -> np.ndarray:
    """What the figure's WIDTH x HEIGHT pixels show: each pixel centre mapped back to cell units
    through the inverse of PARENT, the cell it falls in (white outside the image)."""
    back = invert(parse_transform(PARENT))
    out = np.full((HEIGHT, WIDTH, 3), 255, np.uint8)
    for py in range(HEIGHT):
        for px in range(WIDTH):
            cx, cy = apply(back, (px + 0.5, py + 0.5))
            if 0 <= cx < COLS and 0 <= cy < ROWS:
                out[py, px] = pixels[int(cy), int(cx), :3]
    return out


def test_a_stretched_image_is_put_on_the_figures_pixel_grid():
    pixels = picture()
    root = ElementTree.fromstring(
        portable_svg(qt_like_svg(pixels), width=WIDTH, height=HEIGHT, decode=decode_own_png).split("\n", 1)[1]
    )
    [image] = root.iter(f"{SVG_NS}image")
    group = next(iter(root.iter(f"{SVG_NS}g")))
    # image units are figure pixels now: the group's transform times the image's own is the identity
    m = multiply(parse_transform(group.get("transform")), parse_transform(image.get("transform")))
    assert np.allclose(m, (1, 0, 0, 1, 0, 0), atol=1e-6)
    x, y, w, h = (int(image.get(k)) for k in ("x", "y", "width", "height"))
    grid = decode_own_png(base64.b64decode(image.get(XLINK_HREF).split("base64,", 1)[1]))
    assert grid.shape == (h, w, 4)
    expected = nearest_cells(pixels)
    shown = grid[..., 3] > 0
    assert w >= COLS * 2.37 and h >= ROWS * 1.91  # one grid pixel per figure pixel it covers
    assert np.array_equal(grid[..., :3][shown], expected[y : y + h, x : x + w][shown])
    assert np.array_equal(expected[y : y + h, x : x + w][~shown], np.full(((~shown).sum(), 3), 255, np.uint8))


def test_librsvg_draws_a_stretched_heatmap_cell_for_cell(tmp_path):
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert not installed: cannot render the SVG outside Qt")
    from tests.svg_renders import rsvg

    pixels = picture(1)
    svg = tmp_path / "stretched.svg"
    svg.write_text(portable_svg(qt_like_svg(pixels), width=WIDTH, height=HEIGHT, decode=decode_own_png), encoding="utf-8")
    drawn = rsvg(svg, tmp_path / "stretched.png")
    expected = nearest_cells(pixels)
    assert drawn.shape == expected.shape
    off = np.abs(drawn.astype(int) - expected.astype(int)).max(axis=2) > 2
    assert off.mean() < 0.001, f"{off.sum()} of {off.size} pixels blend cells (a blurred heatmap)"
    # the image left an image (pixelated style and all) is blurred by librsvg: what this guards against
    raw = tmp_path / "left_an_image.svg"
    raw.write_text(portable_svg(qt_like_svg(pixels), width=WIDTH, height=HEIGHT), encoding="utf-8")
    blurred = np.abs(rsvg(raw, tmp_path / "raw.png").astype(int) - expected.astype(int)).max(axis=2) > 2
    assert blurred.mean() > 0.1
