"""A stand-in for a costly widget (a pyqtgraph plot) that the first screen does not show.

Building pyqtgraph plots is most of what the window spends making itself (20-50 ms of CPU a
plot), yet the plots of a dock tabbed behind another (Why?, the memory study) or of a page shown
only once a result arrives are not on screen at start, and most test windows never show them. A
``LazyPage`` takes the widget's place in the layout with the size hints of a pyqtgraph view, so
nothing moves when it is built, and builds it the first time it is painted (Qt paints only what
is on screen, whatever hid it: a stacked page, a tab, a dock behind another) or asked for
(``content()``: to draw into it or export it). Its owner keeps what to draw and draws it on
``built``, so what arrived while the page was unbuilt shows the moment the page is first shown.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

# what a pyqtgraph view (PlotWidget, GraphicsLayoutWidget) asks of a layout before it is laid out
# (its scene's rect: a new widget's size, 640x480 on X11, 600x480 offscreen), so the stand-in is
# laid out as the view will be; the minimum and the policy are a view's everywhere
# (tests/app/test_lazy_pages.py compares them)
VIEW_SIZE_HINT = QSize(640, 480)
VIEW_MINIMUM_HINT = QSize(68, 68)


class LazyPage(QWidget):
    """Holds the place of ``build()``'s widget and builds it when first painted or asked for."""

    built = Signal(QWidget)  # the widget, just built: draw into it what is waiting

    def __init__(self, build: Callable[[], QWidget], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._build = build
        self._content: QWidget | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def is_built(self) -> bool:
        return self._content is not None

    def content(self) -> QWidget:
        """The widget, built now if it was not yet (its ``built`` slots draw into it first)."""
        if self._content is None:
            self._content = self._build()
            self._layout.addWidget(self._content)
            self.built.emit(self._content)
        return self._content

    def paintEvent(self, event) -> None:
        """Painted means on screen: build the widget (it shows from the next frame on)."""
        self.content()
        super().paintEvent(event)

    def sizeHint(self) -> QSize:
        return super().sizeHint() if self._content is not None else VIEW_SIZE_HINT

    def minimumSizeHint(self) -> QSize:
        return super().minimumSizeHint() if self._content is not None else VIEW_MINIMUM_HINT
