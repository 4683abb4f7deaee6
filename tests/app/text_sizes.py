"""How big every text on screen is, in pixels: what a lecture room reads from its back row.

Each visible text is found as ``layout_check`` finds it (Qt labels, buttons, combo boxes, the
editor, and inside every pyqtgraph view its axis ticks, titles, labels and text items); its size
is the pixel size of the smallest font it is drawn in (a point size times the screen's dots per
inch over 72; rich text counts each fragment's own size).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont, QGuiApplication, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTableWidget,
    QWidget,
)


def font_pixels(font: QFont) -> float:
    """The font's em height in pixels on the primary screen."""
    if font.pixelSize() > 0:
        return float(font.pixelSize())
    dpi = QGuiApplication.primaryScreen().logicalDotsPerInchY()
    return font.pointSizeF() * dpi / 72.0


def _document_pixels(document: QTextDocument) -> float | None:
    """The smallest font of any visible character of a text document."""
    sizes = []
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid() and fragment.text().strip():
                sizes.append(font_pixels(fragment.charFormat().font()))
            it += 1
        block = block.next()
    return min(sizes) if sizes else None


def _rich_pixels(text: str, font: QFont) -> float:
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setHtml(text)
    size = _document_pixels(document)
    return font_pixels(font) if size is None else size


def _shown(widget: QWidget, root: QWidget) -> bool:
    """On screen (a view's viewport covers the view itself, so the viewport's region counts)."""
    if not (widget.isVisibleTo(root) and widget.isVisible()):
        return False
    seen = widget.viewport() if isinstance(widget, pg.GraphicsView) else widget
    return not seen.visibleRegion().isEmpty()


def text_sizes(root: QWidget) -> list[tuple[float, str]]:
    """(pixels, what) of every text shown in ``root`` and its pyqtgraph views."""
    found: list[tuple[float, str]] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not _shown(widget, root):
            continue
        if isinstance(widget, QLabel) and widget.text().strip() and not widget.pixmap():
            found.append((_rich_pixels(widget.text(), widget.font()), f"QLabel {widget.text()[:40]!r}"))
        elif isinstance(widget, (QAbstractButton, QComboBox, QTabBar)):
            text = widget.currentText() if isinstance(widget, QComboBox) else getattr(widget, "text", lambda: "")()
            if text.strip():
                found.append((font_pixels(widget.font()), f"{type(widget).__name__} {text[:40]!r}"))
        elif isinstance(widget, QLineEdit) and (widget.text() or widget.placeholderText()):
            found.append((font_pixels(widget.font()), f"QLineEdit {widget.text() or widget.placeholderText()!r}"))
        elif isinstance(widget, QPlainTextEdit) and widget.toPlainText().strip():
            found.append((font_pixels(widget.font()), "code editor"))
        elif isinstance(widget, QHeaderView) and widget.count():
            found.append((font_pixels(widget.font()), "table header"))
        elif isinstance(widget, QTableWidget) and widget.rowCount():
            found.append((font_pixels(widget.font()), "table cells"))
        elif isinstance(widget, pg.GraphicsView):
            found += _graphics_sizes(widget)
    return found


def _graphics_sizes(view: pg.GraphicsView) -> list[tuple[float, str]]:
    found = []
    for item in view.scene().items():
        if not item.isVisible() or item.opacity() == 0:
            continue
        if isinstance(item, pg.AxisItem) and item.isVisible() and item.style["showValues"]:
            font = item.style.get("tickFont") or item.font()
            found.append((font_pixels(font), f"ticks of the {item.orientation} axis"))
        elif hasattr(item, "document") and hasattr(item, "toPlainText") and item.toPlainText().strip():
            size = _document_pixels(item.document())
            if size is not None:
                found.append((size, f"{type(item.parentItem()).__name__} {item.toPlainText()[:40]!r}"))
    return found


def too_small(root: QWidget, least: float) -> list[str]:
    """Every text in ``root`` under ``least`` pixels, described."""
    return [f"{what}: {pixels:.1f} px" for pixels, what in text_sizes(root) if pixels < least - 0.01]
