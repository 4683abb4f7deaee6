"""What a person would call cramped, measured: texts that overlap, texts cut off, docks squeezed
below what their content needs.

Every text on screen is collected with its box in window coordinates: Qt labels, buttons, combo
boxes, group titles, and inside each pyqtgraph view its titles, axis labels, tick labels, legends
and text items (the tick labels as the axis itself lays them out for painting). Then:

- no two text boxes overlap;
- no text is cut off: a label shows all its lines, a graphics text lies inside its view;
- no dock's content (nor the centre) is smaller than its minimum size (a scrolling dock may be).

The same checks run on one dock's content (``dock_problems``, after ``each_dock_raised`` has put
each tabbed dock on top in turn, and ``each_inner_tab`` each tab inside it) and on a dialog
(``dialog_problems``), where two more apply: the dialog lies inside the screen's available
geometry, and no scroll area needs scrolling sideways to show its text (a dialog that cuts its
text on the right, as the F1 shortcuts list did at 1280x720).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRect, QRectF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QApplication,
    QComboBox,
    QDockWidget,
    QLabel,
    QMainWindow,
    QScrollArea,
    QTabBar,
    QTabWidget,
    QWidget,
)

SLACK = 2  # px two boxes may share (anti-aliasing, rounding) before they count as overlapping


@dataclass(frozen=True)
class TextBox:
    text: str
    rect: QRect  # in the window's coordinates
    where: str  # what drew it
    graphics: bool = False  # drawn by pyqtgraph (a tight box) rather than a Qt widget

    def __str__(self) -> str:
        r = self.rect
        return f"{self.where} {self.text[:40]!r} at ({r.x()},{r.y()} {r.width()}x{r.height()})"


def _shown(widget: QWidget, window: QWidget) -> bool:
    """On screen at all (a widget whose children cover it has an empty visible region of its own)."""
    return widget.isVisibleTo(window) and widget.isVisible()


def _window_rect(widget: QWidget, rect: QRect, window: QWidget) -> QRect:
    return QRect(widget.mapTo(window, rect.topLeft()), rect.size())


def _visible_part(widget: QWidget, window: QWidget) -> QRect:
    return _window_rect(widget, widget.visibleRegion().boundingRect(), window)


def _in_scroll_area(widget: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            return True
        parent = parent.parentWidget()
    return False


def _label_text_rect(label: QLabel) -> QRect:
    """Where the label's text is drawn: its width for one line, its height for wrapped text."""
    rect = label.contentsRect()
    if label.wordWrap() or "<br" in label.text() or "\n" in label.text():
        return rect
    hint = label.sizeHint()
    width = min(hint.width(), rect.width())
    align = label.alignment()
    if align & Qt.AlignmentFlag.AlignHCenter:
        left = rect.left() + (rect.width() - width) // 2
    elif align & Qt.AlignmentFlag.AlignRight:
        left = rect.right() - width
    else:
        left = rect.left()
    height = min(hint.height(), rect.height())
    top = rect.top() + (rect.height() - height) // 2 if align & Qt.AlignmentFlag.AlignVCenter or not (
        align & (Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignBottom)
    ) else rect.top()
    return QRect(left, top, width, height)


def widget_texts(window: QWidget) -> list[TextBox]:
    boxes = []
    for widget in window.findChildren(QWidget):
        if not _shown(widget, window):
            continue
        if isinstance(widget, QLabel) and widget.text().strip() and not widget.pixmap():
            rect = _window_rect(widget, _label_text_rect(widget), window).intersected(_visible_part(widget, window))
            if not rect.isEmpty():
                boxes.append(TextBox(widget.text(), rect, f"QLabel {widget.objectName() or type(widget.parentWidget()).__name__}"))
        elif isinstance(widget, (QAbstractButton, QComboBox)) and not isinstance(widget, QTabBar):
            text = widget.currentText() if isinstance(widget, QComboBox) else widget.text()
            rect = _visible_part(widget, window)
            if text.strip() and not rect.isEmpty():
                boxes.append(TextBox(text, rect, type(widget).__name__))
    return boxes


def _clip(item) -> QRectF | None:
    """The scene rectangle an item is clipped to (a view box clips what it holds), if any."""
    parent = item.parentItem()
    while parent is not None:
        if parent.flags() & parent.GraphicsItemFlag.ItemClipsChildrenToShape:
            return parent.sceneBoundingRect()
        parent = parent.parentItem()
    return None


def _graphics_text_rects(view: pg.GraphicsView) -> list[tuple[str, QRectF, str, QRectF | None]]:
    """(text, rect in scene coordinates, kind, clipping rect) of every text the scene draws."""
    scene = view.scene()
    scene.prepareForPaint()
    found = []
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        for item in scene.items():
            if not item.isVisible() or item.opacity() == 0:
                continue
            if isinstance(item, pg.AxisItem) and item.style["showValues"]:
                painter.setFont(item.style.get("tickFont") or item.font())
                specs = item.generateDrawSpecs(painter)
                if specs is None:
                    continue
                for rect, _flags, text in specs[2]:
                    if text.strip():
                        found.append((text, item.mapRectToScene(rect), f"tick of {item.orientation} axis", None))
            elif hasattr(item, "document") and hasattr(item, "toPlainText"):  # a QGraphicsTextItem
                text = item.toPlainText()
                if not text.strip():
                    continue
                margin = item.document().documentMargin()
                rect = item.boundingRect().adjusted(margin, margin, -margin, -margin)
                found.append((text, item.mapRectToScene(rect), type(item.parentItem()).__name__, _clip(item)))
    finally:
        painter.end()
    return found


def graphics_texts(window: QWidget) -> tuple[list[TextBox], list[str]]:
    """The texts of every pyqtgraph view, and those lying partly outside their view (cut off)."""
    boxes, cut = [], []
    for view in window.findChildren(pg.GraphicsView):
        if not _shown(view, window) or view.viewport().visibleRegion().isEmpty():
            continue
        viewport = view.viewport().rect()
        visible = _visible_part(view.viewport(), window)
        for text, scene_rect, kind, clip in _graphics_text_rects(view):
            rect = view.mapFromScene(scene_rect).boundingRect()
            room = viewport if clip is None else view.mapFromScene(clip).boundingRect().intersected(viewport)
            if not room.adjusted(-SLACK, -SLACK, SLACK, SLACK).contains(rect):
                cut.append(f"{kind} {text[:40]!r} at {rect} outside its view {room}")
            global_rect = _window_rect(view.viewport(), rect, window)
            if not visible.contains(global_rect.center()):
                continue  # scrolled out of sight
            boxes.append(TextBox(text, global_rect.intersected(visible), kind, graphics=True))
    return boxes, cut


def overlapping(boxes: list[TextBox]) -> list[str]:
    """Pairs of boxes that overlap: texts drawn by pyqtgraph must not touch at all (their boxes
    are tight); a Qt widget's box is its whole rectangle, so it gets SLACK pixels."""
    problems = []
    for k, a in enumerate(boxes):
        for b in boxes[k + 1 :]:
            slack = 0 if a.graphics and b.graphics else SLACK
            ra = a.rect.adjusted(slack, slack, -slack, -slack)
            rb = b.rect.adjusted(slack, slack, -slack, -slack)
            if ra.intersects(rb) and not (a.rect.contains(b.rect) or b.rect.contains(a.rect)):
                problems.append(f"{a} overlaps {b}")
    return problems


def clipped_labels(window: QWidget) -> list[str]:
    """Labels showing less than their text: fewer lines than it wraps to, or a line cut short."""
    problems = []
    for label in window.findChildren(QLabel):
        if not _shown(label, window) or not label.text().strip() or _in_scroll_area(label):
            continue
        if isinstance(label.parentWidget(), QAbstractScrollArea):
            continue
        rect = label.contentsRect()
        if label.wordWrap():
            needed = label.heightForWidth(label.width())
            if needed > label.height() + SLACK:
                problems.append(f"QLabel {label.text()[:50]!r}: {label.height()} px tall, its text needs {needed}")
        elif label.minimumSizeHint().width() > rect.width() + SLACK + label.margin() * 2 + 2:
            problems.append(f"QLabel {label.text()[:50]!r}: {rect.width()} px wide, its text needs {label.minimumSizeHint().width()}")
    return problems


def squeezed_docks(window: QMainWindow) -> list[str]:
    """Docks (and the centre) laid out smaller than their content's minimum: Qt then cuts it off."""
    problems = []
    parts = [(dock.windowTitle(), dock.widget()) for dock in window.findChildren(QDockWidget) if _shown(dock, window)]
    parts.append(("centre", window.centralWidget()))
    for title, content in parts:
        if content is None or isinstance(content, QScrollArea) or not content.isVisible():
            continue
        least, size = content.minimumSizeHint(), content.size()
        least = least.expandedTo(content.minimumSize())
        if size.width() + SLACK < least.width() or size.height() + SLACK < least.height():
            problems.append(f"{title}: {size.width()}x{size.height()}, its content needs {least.width()}x{least.height()}")
    return problems


def layout_problems(window: QMainWindow) -> list[str]:
    """Everything cramped, clipped or overlapping in ``window`` as it is on screen now."""
    graphics, cut = graphics_texts(window)
    problems = overlapping(widget_texts(window) + graphics)
    problems += cut
    problems += clipped_labels(window)
    problems += squeezed_docks(window)
    return problems


def text_at(window: QWidget, point: QPoint) -> list[str]:
    """The texts drawn at a point (for a failing test's message)."""
    graphics, _ = graphics_texts(window)
    return [str(b) for b in widget_texts(window) + graphics if b.rect.contains(point)]


# --------------------------------------------------------------------------- docks, tabs, dialogs


def each_dock_raised(window: QMainWindow) -> Iterator[QDockWidget]:
    """Every dock that is open, each brought to the top of its tab group in turn (a tabbed dock
    behind another shows nothing to check), the layout settled before it is yielded."""
    for dock in window.findChildren(QDockWidget):
        if dock.isHidden() and not window.tabifiedDockWidgets(dock):
            continue  # closed by the user or the layout: not on screen at all
        dock.show()
        dock.raise_()
        QApplication.processEvents()
        yield dock


def each_inner_tab(root: QWidget) -> Iterator[str]:
    """Every page of every tab widget inside ``root`` made current in turn (its label yielded);
    the first page is current again afterwards."""
    for tabs in root.findChildren(QTabWidget):
        if not _shown(tabs, root):
            continue
        for index in range(tabs.count()):
            tabs.setCurrentIndex(index)
            QApplication.processEvents()
            yield f"{tabs.objectName() or type(tabs.parentWidget()).__name__} tab {tabs.tabText(index)!r}"
        tabs.setCurrentIndex(0)
    yield "first tabs"


def region_problems(root: QWidget) -> list[str]:
    """Overlapping, cut-off and clipped texts inside one widget (a dock's content, a dialog)."""
    graphics, cut = graphics_texts(root)
    return overlapping(widget_texts(root) + graphics) + cut + clipped_labels(root)


def dock_problems(window: QMainWindow, dock: QDockWidget) -> list[str]:
    """``region_problems`` of one dock's content, and whether the dock squeezes it."""
    content = dock.widget()
    if content is None or not _shown(dock, window):
        return []
    problems = [f"{dock.windowTitle()}: {p}" for p in region_problems(content)]
    if not isinstance(content, QScrollArea) and content.isVisible():
        least = content.minimumSizeHint().expandedTo(content.minimumSize())
        size = content.size()
        if size.width() + SLACK < least.width() or size.height() + SLACK < least.height():
            problems.append(f"{dock.windowTitle()}: {size.width()}x{size.height()}, its content needs {least.width()}x{least.height()}")
    return problems


def sideways_scrolling(root: QWidget) -> list[str]:
    """Scroll areas whose content is wider than what they show: text cut on the right."""
    problems = []
    for area in root.findChildren(QScrollArea):
        content = area.widget()
        if content is None or not _shown(area, root):
            continue
        needed = max(content.width(), content.minimumSizeHint().width())
        shown = area.viewport().width()
        if needed > shown + SLACK:
            problems.append(f"{type(root).__name__} scroll area shows {shown} px of {needed}: cut on the right")
    return problems


def dialog_problems(dialog: QWidget, available: QRect | None = None) -> list[str]:
    """Everything cramped, clipped or overlapping in a dialog as it is on screen now, and whether
    it sticks out of ``available`` (the screen's available geometry; the dialog's own screen's
    when None). Its frame counts where a window manager drew one."""
    if available is None:
        available = dialog.screen().availableGeometry()
    problems = region_problems(dialog) + sideways_scrolling(dialog)
    frame = dialog.frameGeometry()
    if not available.adjusted(-SLACK, -SLACK, SLACK, SLACK).contains(frame):
        problems.append(
            f"{dialog.windowTitle()!r} at ({frame.x()},{frame.y()} {frame.width()}x{frame.height()}) sticks out of "
            f"the screen's ({available.x()},{available.y()} {available.width()}x{available.height()})"
        )
    least = dialog.minimumSizeHint()
    if dialog.width() + SLACK < least.width() or dialog.height() + SLACK < least.height():
        problems.append(f"{dialog.windowTitle()!r}: {dialog.width()}x{dialog.height()}, its content needs {least.width()}x{least.height()}")
    return problems


def cut_combo_boxes(window: QWidget) -> list[str]:
    """Combo boxes whose current text is wider than the field that draws it (Qt elides it)."""
    from PySide6.QtWidgets import QStyle, QStyleOptionComboBox

    problems = []
    for combo in window.findChildren(QComboBox):
        if not _shown(combo, window) or not combo.currentText():
            continue
        option = QStyleOptionComboBox()
        combo.initStyleOption(option)
        field = combo.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, combo
        )
        needed = combo.fontMetrics().horizontalAdvance(combo.currentText())
        if needed > field.width():
            problems.append(f"QComboBox {combo.currentText()!r}: {field.width()} px of field, its text needs {needed}")
    return problems
