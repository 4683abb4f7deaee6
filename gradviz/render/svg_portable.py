"""SVG that opens the same in browsers and librsvg as in Qt: the rewrite of what Qt's
QSvgGenerator writes, and the font stack and image style every gradviz SVG uses.

Qt's SVG is made for Qt's own renderer. Three of its habits go wrong elsewhere:

- A cosmetic pen (pyqtgraph's 1 px lines) becomes ``vector-effect="non-scaling-stroke"`` inside a
  group whose ``transform`` maps data to pixels, often 50x or more. librsvg ignores the vector
  effect, so a 1 px line is drawn 50 px wide. We map such a shape's points to pixels ourselves and
  give it the inverse transform, so its stroke is in pixels in every renderer.
- Text is in ``font-family="Sans Serif"``: Qt's alias, not a CSS generic family, so a browser
  without that family falls back to its default serif font. We name a CSS font stack instead.
- Labels are clipped to the width Qt's font metrics give them; elsewhere the same text may be a
  pixel wider and lose its last letter, so groups of text only are not clipped.
- Images carry ``image-rendering="optimizeSpeed"``, which Chromium treats as "auto" and smooths a
  heatmap of 24x24 pixels blown up to 340 px into a blur. CSS ``image-rendering: pixelated`` keeps
  each cell a sharp square (librsvg reads the attribute, browsers the style).

librsvg smooths a stretched image whatever its ``image-rendering`` says, so small images (the
heatmaps, the colour bars) are redrawn as rectangles when a decoder is given, and larger ones
drawn stretched (a pooled heatmap blown up for a slide) are resampled onto the figure's own pixel
grid, nearest cell at each pixel's centre as Qt draws them: a renderer then draws each pixel as
it is, with nothing to smooth.

The size is set in pixels (Qt writes millimetres) so every renderer draws it at the size of the
PNG export. Standard library only: the notebook's figures use the same constants, no Qt needed.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Iterator
from itertools import pairwise
from xml.etree import ElementTree

import numpy as np

from gradviz.render.png import encode_png

SANS = "'DejaVu Sans', 'Helvetica Neue', Helvetica, Arial, 'Liberation Sans', sans-serif"
SERIF = "'DejaVu Serif', 'Times New Roman', Times, 'Liberation Serif', serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"
FONT_STACK = SANS  # the font stack of every gradviz figure
IMAGE_STYLE = "image-rendering:optimizeSpeed;image-rendering:pixelated"  # the last one a renderer knows wins
GENERIC = {"sans serif": SANS, "sansserif": SANS, "sans": SANS, "helvetica": SANS, "arial": SANS,
           "serif": SERIF, "times": SERIF, "monospace": MONO, "courier": MONO}  # fmt: skip

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
NON_SCALING = "non-scaling-stroke"
MAX_CELLS = 128 * 128  # an embedded image of at most this many pixels is redrawn as rectangles
MAX_GRID_PIXELS = 4096 * 4096  # a stretched image is put on the pixel grid up to this size
KAPPA = 0.5522847498  # control-point distance of a cubic Bezier quarter circle

Matrix = tuple[float, float, float, float, float, float]  # SVG's matrix(a, b, c, d, e, f)
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def css_font_family(family: str, resolved: str | None = None) -> str:
    """A CSS font-family list for a Qt font family; ``resolved`` (the family Qt actually drew
    with, e.g. "DejaVu Sans") goes first so a browser that has it matches the PNG."""
    name = family.strip().strip("'\"")
    stack = GENERIC.get(name.lower())
    if stack is None:
        stack = f"'{name}', {SANS}" if name else SANS
    if resolved and f"'{resolved}'" not in stack and resolved.lower() not in GENERIC:
        stack = f"'{resolved}', {stack}"
    return stack


Decoder = Callable[[bytes], "np.ndarray | None"]  # image file bytes -> rows x cols x 4 RGBA uint8


def portable_svg(
    text: str, *, width: int, height: int, resolved_font: str | None = None, decode: Decoder | None = None
) -> str:
    """Qt's SVG ``text`` rewritten to draw alike in Qt, browsers and librsvg, ``width`` x
    ``height`` pixels. With ``decode``, small embedded images (heatmaps, colour bars) become
    rectangles, one per run of equal pixels: librsvg smooths a stretched image whatever its
    ``image-rendering``, and a rectangle has sharp edges everywhere."""
    ElementTree.register_namespace("", SVG_NS)
    ElementTree.register_namespace("xlink", XLINK_NS)
    root = ElementTree.fromstring(text)
    root.set("width", str(width))
    root.set("height", str(height))
    _walk(root, IDENTITY, resolved_font)
    _unclip_text(root)
    if decode is not None:
        _sharpen_images(root, IDENTITY, decode)
    return '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + ElementTree.tostring(root, encoding="unicode")


def _walk(element: ElementTree.Element, ctm: Matrix, resolved_font: str | None) -> None:
    """Fix ``element`` and its children; ``ctm``: the transform of its parent to the root."""
    family = element.get("font-family")
    if family is not None:
        element.set("font-family", css_font_family(family, resolved_font))
    tag = element.tag.rsplit("}", 1)[-1]
    if tag == "image":
        element.set("image-rendering", "optimizeSpeed")
        element.set("style", IMAGE_STYLE)
    own = parse_transform(element.get("transform"))
    if element.get("vector-effect") == NON_SCALING:
        _bake(element, tag, multiply(ctm, own) if own else ctm)
        return
    here = multiply(ctm, own) if own else ctm
    for child in element:
        _walk(child, here, resolved_font)


def _sharpen_images(element: ElementTree.Element, ctm: Matrix, decode: Decoder) -> None:
    """Every embedded image under ``element`` (``ctm``: its transform to the root) as rectangles
    (small ones) or on the figure's pixel grid (larger ones drawn stretched); others as they are."""
    own = parse_transform(element.get("transform"))
    here = multiply(ctm, own) if own else ctm
    for index, child in enumerate(list(element)):
        if child.tag.rsplit("}", 1)[-1] != "image":
            _sharpen_images(child, here, decode)
            continue
        pixels = _pixels(child, decode)
        if pixels is None:
            continue
        sharp = _cells(child, pixels) if pixels.shape[0] * pixels.shape[1] <= MAX_CELLS else _on_pixel_grid(child, pixels, here)
        if sharp is not None:
            element.remove(child)
            element.insert(index, sharp)


def _pixels(image: ElementTree.Element, decode: Decoder) -> np.ndarray | None:
    """The RGBA pixels of an embedded, stretched-to-fit image (None: not one, or unreadable)."""
    href = image.get(f"{{{XLINK_NS}}}href") or image.get("href") or ""
    if not href.startswith("data:image/") or "base64," not in href or image.get("preserveAspectRatio") != "none":
        return None
    return decode(base64.b64decode(href.split("base64,", 1)[1]))


def _on_pixel_grid(image: ElementTree.Element, pixels: np.ndarray, ctm: Matrix) -> ElementTree.Element | None:
    """The image resampled to the pixels it covers in the figure (``ctm``: its parent's transform
    to the root), each pixel the cell under its centre, placed back with the inverse transform;
    None where it is not drawn stretched (a smaller image is averaged, rightly) or is rotated."""
    own = parse_transform(image.get("transform"))
    m = multiply(ctm, own) if own else ctm
    back = invert(ctm)
    if back is None or abs(m[1]) > 1e-9 or abs(m[2]) > 1e-9:
        return None
    rows, cols = pixels.shape[:2]
    x, y = float(image.get("x", 0)), float(image.get("y", 0))
    (ax, ay), (bx, by) = apply(m, (x, y)), apply(m, (x + float(image.get("width", cols)), y + float(image.get("height", rows))))
    left, right, top, bottom = min(ax, bx), max(ax, bx), min(ay, by), max(ay, by)
    if right - left <= cols and bottom - top <= rows:
        return None
    x0, x1, y0, y1 = math.floor(left), math.ceil(right), math.floor(top), math.ceil(bottom)
    if (x1 - x0) * (y1 - y0) > MAX_GRID_PIXELS:
        return None
    col = _nearest(np.arange(x0, x1) + 0.5, left, right, cols, flipped=bx < ax)
    row = _nearest(np.arange(y0, y1) + 0.5, top, bottom, rows, flipped=by < ay)
    grid = np.zeros((y1 - y0, x1 - x0, 4), np.uint8)  # pixels whose centre lies outside: transparent
    inside_rows, inside_cols = np.nonzero(row >= 0)[0], np.nonzero(col >= 0)[0]
    rgba = pixels if pixels.shape[2] == 4 else np.dstack([pixels, np.full((rows, cols), 255, np.uint8)])
    grid[np.ix_(inside_rows, inside_cols)] = rgba[np.ix_(row[inside_rows], col[inside_cols])]
    placed = ElementTree.Element(image.tag, {k: v for k, v in image.attrib.items() if k not in PLACEMENT})
    placed.attrib.update({"x": str(x0), "y": str(y0), "width": str(x1 - x0), "height": str(y1 - y0)})
    placed.set("transform", _matrix_text(back))
    placed.set(f"{{{XLINK_NS}}}href", "data:image/png;base64," + base64.b64encode(encode_png(grid)).decode("ascii"))
    return placed


PLACEMENT = ("x", "y", "width", "height", "transform", "href", f"{{{XLINK_NS}}}href")


def _nearest(centres: np.ndarray, low: float, high: float, count: int, *, flipped: bool) -> np.ndarray:
    """The cell (0 .. count-1) under each pixel centre of a span drawn from ``low`` to ``high``;
    -1 for centres outside it."""
    cells = np.floor((centres - low) / (high - low) * count).astype(int)
    cells = np.where((centres >= low) & (centres < high), np.clip(cells, 0, count - 1), -1)
    return np.where(cells >= 0, count - 1 - cells, -1) if flipped else cells


def _cells(image: ElementTree.Element, pixels: np.ndarray) -> ElementTree.Element:
    """The image as a group of rectangles in its own place."""
    rows, cols = pixels.shape[:2]
    x, y = float(image.get("x", 0)), float(image.get("y", 0))
    sx, sy = float(image.get("width", cols)) / cols, float(image.get("height", rows)) / rows
    group = ElementTree.Element(f"{{{SVG_NS}}}g", dict(CELLS_GROUP))
    if image.get("transform"):
        group.set("transform", image.get("transform"))
    for rect in cell_rects(pixels, x, y, sx, sy):
        ElementTree.SubElement(group, f"{{{SVG_NS}}}rect", rect)
    return group


CELLS_GROUP = {"stroke": "none", "shape-rendering": "crispEdges"}  # no seams, no blended edges


def cell_rects(pixels: np.ndarray, x: float, y: float, cell_w: float, cell_h: float) -> Iterator[dict[str, str]]:
    """The attributes of one rectangle per run of equal pixels along each row of ``pixels``
    (rows x cols x 3 RGB or x 4 RGBA), each pixel ``cell_w`` x ``cell_h`` with (x, y) the top left."""
    rows, cols = pixels.shape[:2]
    for r in range(rows):
        line = pixels[r]
        starts = [0, *(np.nonzero(np.any(line[1:] != line[:-1], axis=1))[0] + 1).tolist(), cols]
        for c0, c1 in pairwise(starts):
            red, green, blue = (int(v) for v in line[c0][:3])
            alpha = int(line[c0][3]) if line.shape[1] > 3 else 255
            if alpha == 0:
                continue
            rect = {"x": f"{x + c0 * cell_w:.6g}", "y": f"{y + r * cell_h:.6g}", "width": f"{(c1 - c0) * cell_w:.6g}",
                    "height": f"{cell_h:.6g}", "fill": f"#{red:02x}{green:02x}{blue:02x}"}  # fmt: skip
            if alpha < 255:
                rect["fill-opacity"] = f"{alpha / 255:.3g}"
            yield rect


def _unclip_text(root: ElementTree.Element) -> None:
    """Drop the clip of groups that hold only text: Qt clips a label to the width its own font
    metrics give, and a renderer whose glyphs are a pixel wider would cut the last letter."""
    for group in root.iter(f"{{{SVG_NS}}}g"):
        if group.get("clip-path") is None:
            continue
        shapes = [e for e in group.iter() if e.tag.rsplit("}", 1)[-1] not in ("g", "text", "tspan")]
        if not shapes and any(e.tag.endswith("text") for e in group.iter()):
            del group.attrib["clip-path"]


def _bake(element: ElementTree.Element, tag: str, ctm: Matrix) -> None:
    """Put the shape's points in root pixels and undo its ancestors' transform on the element
    itself: the geometry is unchanged, and the stroke is drawn in root pixels everywhere."""
    del element.attrib["vector-effect"]
    if ctm == IDENTITY:
        return
    inverse = invert(ctm)
    if inverse is None:  # a degenerate transform draws nothing in Qt either
        element.set("display", "none")
        return
    if tag in ("polyline", "polygon"):
        element.set("points", _map_points(element.get("points", ""), ctm))
    elif tag == "path":
        element.set("d", _map_path(element.get("d", ""), ctm))
    elif tag == "rect":
        x, y = float(element.get("x", 0)), float(element.get("y", 0))
        w, h = float(element.get("width", 0)), float(element.get("height", 0))
        _retag(element, "polygon", ("x", "y", "width", "height", "rx", "ry"))
        corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
        element.set("points", " ".join(_pair(apply(ctm, p)) for p in corners))
    elif tag in ("ellipse", "circle"):
        cx, cy = float(element.get("cx", 0)), float(element.get("cy", 0))
        rx = float(element.get("rx", element.get("r", 0)))
        ry = float(element.get("ry", element.get("r", 0)))
        _retag(element, "path", ("cx", "cy", "rx", "ry", "r"))
        element.set("d", _map_path(_ellipse_path(cx, cy, rx, ry), ctm))
    else:  # a shape Qt does not write with a cosmetic pen: leave it in its own coordinates
        return
    element.set("transform", _matrix_text(inverse))


def _retag(element: ElementTree.Element, tag: str, drop: tuple[str, ...]) -> None:
    element.tag = f"{{{SVG_NS}}}{tag}" if element.tag.startswith("{") else tag
    for name in drop:
        element.attrib.pop(name, None)


def _ellipse_path(cx: float, cy: float, rx: float, ry: float) -> str:
    kx, ky = KAPPA * rx, KAPPA * ry
    return (
        f"M{cx + rx},{cy} C{cx + rx},{cy + ky} {cx + kx},{cy + ry} {cx},{cy + ry} "
        f"C{cx - kx},{cy + ry} {cx - rx},{cy + ky} {cx - rx},{cy} "
        f"C{cx - rx},{cy - ky} {cx - kx},{cy - ry} {cx},{cy - ry} "
        f"C{cx + kx},{cy - ry} {cx + rx},{cy - ky} {cx + rx},{cy} Z"
    )


NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_TOKENS = re.compile(rf"[A-Za-z]|{NUMBER}")


def _map_points(points: str, m: Matrix) -> str:
    values = [float(v) for v in re.findall(NUMBER, points)]
    return " ".join(_pair(apply(m, (values[k], values[k + 1]))) for k in range(0, len(values) - 1, 2))


def _map_path(d: str, m: Matrix) -> str:
    """Absolute M, L, C, Q, S, T and Z (all Qt writes) with each x,y pair mapped; a path with any
    other command is left alone."""
    out: list[str] = []
    numbers: list[float] = []
    for token in _TOKENS.findall(d):
        if token.isalpha():
            if token not in "MLCQSTZ":
                return d
            out += _mapped_pairs(numbers, m)
            numbers = []
            out.append(token)
        else:
            numbers.append(float(token))
    out += _mapped_pairs(numbers, m)
    return " ".join(out)


def _mapped_pairs(numbers: list[float], m: Matrix) -> list[str]:
    return [_pair(apply(m, (numbers[k], numbers[k + 1]))) for k in range(0, len(numbers) - 1, 2)]


def parse_transform(text: str | None) -> Matrix | None:
    """The ``matrix(...)``, ``translate(...)`` or ``scale(...)`` Qt writes (None: no transform)."""
    if not text:
        return None
    result = IDENTITY
    for name, args in re.findall(r"(\w+)\s*\(([^)]*)\)", text):
        v = [float(x) for x in re.findall(NUMBER, args)]
        if name == "matrix" and len(v) == 6:
            step: Matrix = (v[0], v[1], v[2], v[3], v[4], v[5])
        elif name == "translate" and v:
            step = (1.0, 0.0, 0.0, 1.0, v[0], v[1] if len(v) > 1 else 0.0)
        elif name == "scale" and v:
            step = (v[0], 0.0, 0.0, v[1] if len(v) > 1 else v[0], 0.0, 0.0)
        else:
            raise ValueError(f"unexpected SVG transform {text!r}")
        result = multiply(result, step)
    return result


def multiply(m: Matrix, n: Matrix) -> Matrix:
    """m then n applied to a point's own coordinates: the matrix product m · n."""
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (a * a2 + c * b2, b * a2 + d * b2, a * c2 + c * d2, b * c2 + d * d2, a * e2 + c * f2 + e, b * e2 + d * f2 + f)


def invert(m: Matrix) -> Matrix | None:
    a, b, c, d, e, f = m
    det = a * d - b * c
    if abs(det) < 1e-12:
        return None
    return (d / det, -b / det, -c / det, a / det, (c * f - d * e) / det, (b * e - a * f) / det)


def apply(m: Matrix, p: tuple[float, float]) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return (a * p[0] + c * p[1] + e, b * p[0] + d * p[1] + f)


def scale_of(m: Matrix) -> float:
    """How much a length grows under ``m`` (the square root of its area factor)."""
    return math.sqrt(abs(m[0] * m[3] - m[1] * m[2]))


def _pair(p: tuple[float, float]) -> str:
    return f"{p[0]:.6g},{p[1]:.6g}"


def _matrix_text(m: Matrix) -> str:
    return "matrix(" + ",".join(f"{v:.9g}" for v in m) + ")"
