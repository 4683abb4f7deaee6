"""Heights that follow square cells: the Jacobian panel is no taller than square cells of its maps'
width need, and the widget holding it (the window's centre) no taller than that and its other
items, so the height the maps cannot use goes to the window's docks (the autograd graph) instead
of grey bands above and below the block. The docks below the centre give that height back when
the cap rises again (a taller block): a main window keeps its docks' sizes otherwise."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QBoxLayout, QDockWidget, QMainWindow, QWidget

NO_CAP = 16_777_215  # Qt's QWIDGETSIZE_MAX: no maximum


def fit_height(panel: QWidget, plots: QWidget, wanted: float | None) -> None:
    """Cap ``panel`` at the height where ``plots`` (inside it) is ``wanted`` px tall; None: no cap.
    Only in the window's centre: lent to presentation mode's stage, the panel has the stage's
    height to itself and its text grows, so a cap made for the window would squeeze it."""
    if not in_window_centre(panel):
        wanted = None
    cap = (
        NO_CAP
        if wanted is None
        else max(round(panel.height() - plots.height() + wanted), panel.minimumSizeHint().height())
    )
    if abs(cap - panel.maximumHeight()) > 1:
        panel.setMaximumHeight(cap)
    cap_container(panel)


def in_window_centre(panel: QWidget) -> bool:
    """Whether ``panel`` sits in its main window's central widget (not lent elsewhere)."""
    parent = panel.parentWidget()
    window = parent.parentWidget() if parent is not None else None
    return isinstance(window, QMainWindow) and window.centralWidget() is parent


def cap_container(panel: QWidget) -> None:
    """A vertical box around ``panel`` gives its spare height to the other items of its own
    container (a box layout gives it to any item that may grow, the banner included): its maximum
    is the panel's and its other items' natural heights."""
    parent = panel.parentWidget()
    layout = parent.layout() if parent is not None else None
    if not isinstance(layout, QBoxLayout) or layout.direction() not in (
        QBoxLayout.Direction.TopToBottom,
        QBoxLayout.Direction.BottomToTop,
    ):
        return
    if not isinstance(getattr(panel, "_container_watch", None), _Watch):
        panel._container_watch = _Watch(panel, parent)
    cap = NO_CAP
    if panel.maximumHeight() < NO_CAP:
        margins = layout.contentsMargins()
        others = [layout.itemAt(k) for k in range(layout.count())]
        others = [item for item in others if item.widget() is not panel and not item.isEmpty()]
        cap = panel.maximumHeight() + margins.top() + margins.bottom() + layout.spacing() * len(others)
        cap += sum(least_height(item, layout.contentsRect().width()) for item in others)
    old = parent.maximumHeight()
    if abs(cap - old) <= 1:
        return
    window = parent.parentWidget()
    if not isinstance(window, QMainWindow) or window.centralWidget() is not parent:
        parent.setMaximumHeight(cap)
        return
    if old >= NO_CAP:  # the docks' shares of the height before the centre gives them any
        parent.setProperty(
            "uncapped_docks", [(d, d.height() / window.height()) for d in bottom_docks(window)]
        )
    parent.setMaximumHeight(cap)
    saved = parent.property("uncapped_docks") or []
    if cap > old and saved:  # a taller block: the docks shrink back (no further than they were)
        QTimer.singleShot(0, parent, lambda: restore_docks(window, saved))
    if cap >= NO_CAP:
        parent.setProperty("uncapped_docks", None)


def least_height(item, width: int) -> int:
    """The height an item of the container needs at ``width``: its minimum (a banner's size hint
    counts its folded details, its minimum does not), or its height for that width."""
    height = item.minimumSize().height()
    if item.hasHeightForWidth():
        height = max(height, item.heightForWidth(width))
    return height


def bottom_docks(window: QMainWindow) -> list[QDockWidget]:
    """The docks shown below the centre."""
    area = Qt.DockWidgetArea.BottomDockWidgetArea
    return [
        d
        for d in window.findChildren(QDockWidget)
        if d.isVisible() and not d.isFloating() and window.dockWidgetArea(d) == area
    ]


def restore_docks(window: QMainWindow, saved: list) -> None:
    """The docks back to their shares of the window's height, where they are taller."""
    docks = [(d, round(share * window.height())) for d, share in saved]
    docks = [(d, h) for d, h in docks if d.isVisible() and d.height() > h]
    if docks:
        window.resizeDocks([d for d, _ in docks], [h for _, h in docks], Qt.Orientation.Vertical)


class _Watch(QObject):
    """Caps the container again when one of its items changes its height (the banner folds its
    details into one line): the maximum counts their natural heights."""

    def __init__(self, panel: QWidget, parent: QWidget) -> None:
        super().__init__(panel)
        self.panel = panel
        parent.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is not self.panel.parentWidget():
            return False
        if event.type() == QEvent.Type.ParentChange and not in_window_centre(self.panel):
            self.panel.setMaximumHeight(NO_CAP)  # lent to presentation mode: the stage's height is its own
            watched.setMaximumHeight(NO_CAP)
        elif event.type() == QEvent.Type.LayoutRequest:
            cap_container(self.panel)
        return False
