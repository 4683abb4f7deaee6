"""Saving a panel's figures: PNG, SVG or PDF at a chosen size with a caption, and one place that
turns a failed write into a message a user can act on.

A figure is a pyqtgraph layout (or plot) of a panel. For the export it is laid out afresh at the
size asked for, in logical pixels no wider than ``LOGICAL_WIDTH`` so the text keeps its on-screen
proportions, drawn through pyqtgraph's export mode (so pixel-sized symbols and pens scale with
the figure), and put back as it was. The caption (the Function, the verdict, the hint) is set
below the figure at the same scale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from PySide6.QtCore import QMarginsF, QRectF, QSize, QSizeF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontInfo,
    QImage,
    QPageSize,
    QPainter,
    QPdfWriter,
    QPicture,
    QPixmap,
    QTextDocument,
)
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QGraphicsItem, QGraphicsWidget

from gradviz.render.svg_portable import portable_svg

FORMATS = ("png", "svg", "pdf")
EXPORT_WIDTH = 1920  # pixels: sharp on a lecture slide
DEFAULT_SIZE = (EXPORT_WIDTH, 1080)
LOGICAL_WIDTH = 1280  # a figure wider than this is drawn at 1280 px and scaled: text keeps its proportions
MIN_LOGICAL_WIDTH = 640
CAPTION_POINTS = 11
MARGIN = 12  # logical pixels around the caption
WRITABLE_HINT = "check that the folder is writable."  # what a failed write of a figure asks
UI_ONLY = 0x6776  # QGraphicsItem.data key: True on items that show the UI's state, not the data


@runtime_checkable
class FigurePanel(Protocol):
    """A panel whose figures the window's exports offer: ``figures()`` names each figure (with what
    ``export_figure`` draws for it), ``export`` writes one of them."""

    def figures(self) -> dict[str, dict]: ...

    def export(self, name: str, path: str, *, size: tuple[int, int] = DEFAULT_SIZE, caption: str = "") -> None: ...


def slide_size(height_ratio: float) -> tuple[int, int]:
    """(width, height) of a figure as wide as a slide wants, ``height_ratio`` times as high."""
    return EXPORT_WIDTH, round(EXPORT_WIDTH * height_ratio)


def save_png(image: QImage | QPixmap, path: str) -> None:
    """Write ``image`` as PNG; OSError (with the path) when Qt cannot, e.g. a missing folder."""
    if not image.save(str(path), "PNG"):
        raise OSError(f"Could not write the PNG to {path}: check that the folder exists and is writable.")


def _check_folder(path: Path) -> None:
    if not path.parent.is_dir():
        raise OSError(f"Could not write {path}: the folder {path.parent} does not exist.")


def _caption_document(caption: str, width: float) -> QTextDocument:
    doc = QTextDocument()
    font = QFont()
    font.setPointSize(CAPTION_POINTS)
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setPlainText(caption)
    doc.setTextWidth(width)
    return doc


def mark_ui_only(item: QGraphicsItem) -> None:
    """``item`` shows where the user is (a step-through's row, a selection), not the data:
    exports leave it out."""
    QGraphicsItem.setData(item, UI_ONLY, True)  # pyqtgraph items shadow data() and setData()


@contextmanager
def export_mode(scene, opts: dict) -> Iterator[None]:
    """While drawing an export: every item knows it (pyqtgraph's ``setExportMode`` protocol, so
    pixel-sized pens and symbols scale with the figure), and the items marked UI-only are hidden
    (shown again after, those that were shown)."""
    exporting = [item for item in scene.items() if hasattr(item, "setExportMode")]
    hidden = [item for item in scene.items() if QGraphicsItem.data(item, UI_ONLY) and item.isVisible()]
    for item in exporting:
        item.setExportMode(True, opts)
    for item in hidden:
        item.hide()
    try:
        yield
    finally:
        for item in hidden:
            item.show()
        for item in exporting:
            item.setExportMode(False, opts)


def export_figure(
    path: str | Path,
    root: QGraphicsWidget | None = None,
    *,
    size: tuple[int, int] = DEFAULT_SIZE,
    caption: str = "",
    region: Callable[[], QRectF] | None = None,
    layout_width: float = 1.0,
    parts: list[dict] | None = None,
) -> Path:
    """Draw the scene item ``root`` at ``size`` pixels (``path``'s suffix picks PNG, SVG or PDF)
    with ``caption`` below it.

    ``region``: the part of the laid-out scene to draw (default: all of ``root``);
    ``layout_width``: lay ``root`` out this many times the figure's width (a region that is a
    third of ``root`` asks for 3), so the region itself gets the figure's proportions.
    ``parts``: several such figures side by side instead, each a dict of ``root``, ``region``,
    ``layout_width`` and ``share`` (its part of the width).
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"cannot export as {path.suffix or 'no suffix'}: use one of {', '.join(FORMATS)}")
    _check_folder(path)
    if parts is None:
        parts = [{"root": root, "region": region, "layout_width": layout_width, "share": 1.0}]
    width, height = max(int(size[0]), 64), max(int(size[1]), 64)
    logical = min(max(width, MIN_LOGICAL_WIDTH), LOGICAL_WIDTH)
    scale = width / logical
    doc = _caption_document(caption, logical - 2 * MARGIN) if caption else None
    caption_height = doc.size().height() + 2 * MARGIN if doc else 0.0
    figure_height = max(height / scale - caption_height, 100.0)
    total_share = sum(part.get("share", 1.0) for part in parts)

    _device, painter, finish = _open(path, fmt, width, height, caption)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.fillRect(QRectF(0, 0, width, height), QColor("white"))
        left = 0.0
        for part in parts:
            part_width = logical * part.get("share", 1.0) / total_share
            _draw_part(painter, part, QRectF(left * scale, 0, part_width * scale, figure_height * scale), scale)
            left += part_width
        if doc is not None:
            painter.save()
            painter.translate(MARGIN * scale, (figure_height + MARGIN) * scale)
            painter.scale(scale, scale)
            doc.drawContents(painter)
            painter.restore()
    finally:
        painter.end()
    finish()
    return path


def _draw_part(painter: QPainter, part: dict, target: QRectF, scale: float) -> None:
    """Lay ``part["root"]`` out at the target's size (in logical pixels), draw it, put it back."""
    root: QGraphicsWidget = part["root"]
    scene = root.scene()
    old = root.geometry()
    logical = QSizeF(target.width() / scale * part.get("layout_width", 1.0), target.height() / scale)
    root.setGeometry(QRectF(old.topLeft(), logical))
    _activate(root)
    try:
        source = part["region"]() if part.get("region") else root.sceneBoundingRect()
        opts = {"antialias": True, "background": QColor("white"), "painter": painter, "resolutionScale": scale}
        with export_mode(scene, opts):
            scene.render(painter, target, source, Qt.AspectRatioMode.KeepAspectRatio)
    finally:
        root.setGeometry(old)
        _activate(root)


def _activate(root: QGraphicsWidget) -> None:
    """Lay the item's children out now (pyqtgraph shadows ``layout()`` with an attribute)."""
    layout = QGraphicsWidget.layout(root)
    if layout is not None:
        layout.activate()


def _open(path: Path, fmt: str, width: int, height: int, title: str):
    """(device, painter, finish) for one format; finish() writes what is not written yet."""
    if fmt == "png":
        image = QImage(width, height, QImage.Format.Format_ARGB32)
        image.fill(QColor("white"))
        return image, QPainter(image), lambda: save_png(image, str(path))
    if fmt == "svg":
        # Drawn into a QPicture first, then replayed into the SVG: QSvgGenerator keeps a stale clip
        # after QPainter.restore() (scene.render's per-item clips), and a replayed picture sets each
        # clip explicitly. SVG 1.1 for the clip paths themselves: lines stay inside their plots.
        picture = QPicture()
        painter = QPainter()
        if not painter.begin(picture):
            raise OSError(f"Could not draw the SVG for {path}.")
        return picture, painter, lambda: _write_svg(picture, path, width, height, title)
    pdf = QPdfWriter(str(path))
    pdf.setResolution(96)
    pdf.setPageSize(QPageSize(QSizeF(width * 0.75, height * 0.75), QPageSize.Unit.Point, "figure"))
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0))
    pdf.setTitle(title.splitlines()[0] if title else "gradviz figure")
    pdf.setCreator("gradviz")
    painter = QPainter()
    if not painter.begin(pdf):
        raise OSError(f"Could not write the PDF to {path}: {WRITABLE_HINT}")
    return pdf, painter, lambda: _exists(path)


def _write_svg(picture: QPicture, path: Path, width: int, height: int, title: str) -> None:
    """Replay ``picture`` into Qt's SVG generator, then make the file portable
    (``render.svg_portable``: what browsers and librsvg draw as the PNG)."""
    svg = QSvgGenerator(QSvgGenerator.SvgVersion.Svg11)
    svg.setFileName(str(path))
    svg.setSize(QSize(width, height))
    svg.setViewBox(QRectF(0, 0, width, height))
    svg.setResolution(96)
    svg.setTitle(title.splitlines()[0] if title else "gradviz figure")
    svg.setDescription(title)
    painter = QPainter()
    if not painter.begin(svg):
        raise OSError(f"Could not write the SVG to {path}: {WRITABLE_HINT}")
    try:
        ratio = picture.logicalDpiX() / svg.logicalDpiX()  # drawPicture scales by it: undo that
        painter.scale(1 / ratio, 1 / ratio)
        painter.drawPicture(0, 0, picture)
    finally:
        painter.end()
    _exists(path)
    text = path.read_text(encoding="utf-8")
    resolved = QFontInfo(QFont()).family()  # what "Sans Serif" became in the PNG
    svg_text = portable_svg(text, width=width, height=height, resolved_font=resolved, decode=_rgba)
    path.write_text(svg_text, encoding="utf-8")


def _rgba(data: bytes) -> np.ndarray | None:
    """An image file's pixels as rows x cols x 4 RGBA (None: Qt cannot read it)."""
    image = QImage.fromData(data)
    if image.isNull():
        return None
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : image.width() * 4].reshape(image.height(), image.width(), 4).copy()


def _exists(path: Path) -> None:
    if not path.is_file() or path.stat().st_size == 0:
        raise OSError(f"Could not write {path}: {WRITABLE_HINT}")
