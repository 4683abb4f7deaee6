"""The rewrite of Qt's SVG (``render.svg_portable``) on small documents shaped like what
QSvgGenerator writes: no Qt, no renderer."""

from __future__ import annotations

from xml.etree import ElementTree

import numpy as np

from gradviz.render.svg_portable import (
    FONT_STACK,
    apply,
    css_font_family,
    multiply,
    parse_transform,
    portable_svg,
    scale_of,
)

SVG = "{http://www.w3.org/2000/svg}"
QT_SVG = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg width="338.667mm" height="190.5mm" viewBox="0 0 1280 720" xmlns="http://www.w3.org/2000/svg"
 xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1">
<defs><clipPath id="clipPath1"><path vector-effect="none" d="M0,0 L10,0 L10,10 Z "/></clipPath></defs>
<g fill="none" stroke="black" stroke-width="1">
<g stroke="#222222" stroke-width="1" transform="matrix(86,0,0,-30,100,500)" font-family="Sans Serif">
<polyline fill="none" vector-effect="non-scaling-stroke" points="0,0 2,1 " />
<path vector-effect="non-scaling-stroke" d="M0,0 L1,0 C1,1 2,1 2,2 Z " />
<rect vector-effect="non-scaling-stroke" x="0" y="0" width="2" height="1"/>
<image x="0" y="0" width="2" height="1" preserveAspectRatio="none" image-rendering="optimizeSpeed"
 xlink:href="data:image/png;base64,AAAA"/>
</g>
<g clip-path="url(#clipPath1)"><g font-family="Sans Serif"><text x="1" y="2">label</text></g></g>
<g clip-path="url(#clipPath1)"><g><polyline vector-effect="non-scaling-stroke" points="0,0 5,5"/></g></g>
</g>
</svg>"""
QT_MATRIX = (86.0, 0.0, 0.0, -30.0, 100.0, 500.0)


def _ctm(root, target):
    """The transform from ``target``'s own coordinates to the root's."""
    path = []

    def find(element, trail):
        if element is target:
            path.extend([*trail, element])
            return True
        return any(find(child, [*trail, element]) for child in element)

    find(root, [])
    ctm = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    for element in path:
        own = parse_transform(element.get("transform"))
        ctm = multiply(ctm, own) if own else ctm
    return ctm


def _portable(**options):
    return ElementTree.fromstring(portable_svg(QT_SVG, width=1280, height=720, **options).split("\n", 1)[1])


def test_cosmetic_strokes_are_drawn_in_pixels_at_the_same_place():
    root = _portable()
    assert (root.get("width"), root.get("height")) == ("1280", "720")
    assert not [e for e in root.iter() if e.get("vector-effect") == "non-scaling-stroke"]
    polyline = next(root.iter(f"{SVG}polyline"))
    ctm = _ctm(root, polyline)
    assert abs(scale_of(ctm) - 1.0) < 1e-9  # a 1 px stroke stays 1 px
    points = [tuple(map(float, p.split(","))) for p in polyline.get("points").split()]
    expected = [apply(QT_MATRIX, p) for p in ((0, 0), (2, 1))]
    drawn = [apply(ctm, p) for p in points]
    np.testing.assert_allclose(drawn, expected, atol=1e-3)  # where Qt put it
    rect = [e for e in root.iter(f"{SVG}polygon")]
    assert len(rect) == 1  # the rect under a transform became its four mapped corners
    corners = [apply(_ctm(root, rect[0]), tuple(map(float, p.split(",")))) for p in rect[0].get("points").split()]
    np.testing.assert_allclose(corners[2], apply(QT_MATRIX, (2, 1)), atol=1e-3)
    path = next(p for p in root.iter(f"{SVG}path") if "C" in p.get("d"))  # not the clip path's
    assert abs(scale_of(_ctm(root, path)) - 1) < 1e-9
    ends = [float(v) for v in path.get("d").replace(",", " ").split()[-3:-1]]  # the last C's end point
    np.testing.assert_allclose(apply(_ctm(root, path), tuple(ends)), apply(QT_MATRIX, (2, 2)), atol=1e-3)


def test_fonts_images_and_text_clips():
    root = _portable()
    families = {e.get("font-family") for e in root.iter() if e.get("font-family")}
    assert families == {FONT_STACK}
    assert css_font_family("Sans Serif", "DejaVu Sans").startswith("'DejaVu Sans', ")
    assert css_font_family("Monospace").endswith("monospace") and css_font_family("Foo").startswith("'Foo', ")
    image = next(root.iter(f"{SVG}image"))  # no decoder: stays an image, pixelated for browsers
    assert image.get("image-rendering") == "optimizeSpeed" and "image-rendering:pixelated" in image.get("style")
    clipped = [g for g in root.iter(f"{SVG}g") if g.get("clip-path")]
    assert len(clipped) == 1 and next(clipped[0].iter(f"{SVG}polyline")) is not None  # the text's clip dropped


def test_a_small_image_becomes_one_rectangle_per_run_of_equal_pixels():
    pixels = np.array([[[255, 0, 0, 255], [255, 0, 0, 255]]], np.uint8)  # one row, two equal red pixels
    root = _portable(decode=lambda data: pixels)
    assert not list(root.iter(f"{SVG}image"))
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#ff0000"]
    assert len(rects) == 1 and (rects[0].get("width"), rects[0].get("height")) == ("2", "1")
    group = next(g for g in root.iter(f"{SVG}g") if g.get("shape-rendering") == "crispEdges")
    assert _ctm(root, group) == QT_MATRIX  # in the image's place
