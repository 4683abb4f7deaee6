"""Where the panels sit in the main window, for the size it has.

Two arrangements. *Wide* (a desktop monitor): the picker, editor and output down the left, the
Jacobians in the centre with the graph below them, the memory study in a column on the right.
*Compact* (a laptop, a 1280x720 projector, half a screen): the picker and editor on the left, the
Jacobians in the centre, and the graph, the memory study and the output as tabs below them.
While the user has not moved a dock, the window switches between the two as it is resized;
once they have, their layout is theirs (and QSettings brings it back).

Nothing here forces a size: every panel shrinks, the memory study scrolls in its dock and the
run bar's last groups overflow into the toolbar's menu, so the window fits an 800x600 screen.
``LayoutSaver`` writes the layout a moment after each change (a crash keeps it, not only a clean exit).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFrame,
    QMainWindow,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

DEFAULT_SIZE = (1680, 1020)  # first launch, shrunk to the screen
MIN_SIZE = (800, 600)  # the most any panel may ask for, together
WIDE = (1560, 900)  # at least this big: the memory study gets a column of its own
MEMORY_DOCK = "Memory: fused vs unfused conv-BN"
DOCKS = ("Functions", "Code", "Output", "Autograd graph", MEMORY_DOCK)
PANELS = {"Functions": "picker", "Code": "editor", "Output": "output", "Autograd graph": "graph", MEMORY_DOCK: "memory"}
SCROLLING = ("memory",)
GRAPH_SHARE = {"wide": 0.3, "compact": 0.2}  # of the height: the Jacobians above keep >= 40 % of it  # panels whose dock scrolls instead of asking for their full height


def default_size() -> tuple[int, int]:
    screen = QApplication.primaryScreen()
    if screen is None:
        return DEFAULT_SIZE
    available = screen.availableGeometry()
    return (
        max(MIN_SIZE[0], min(DEFAULT_SIZE[0], available.width())),
        max(MIN_SIZE[1], min(DEFAULT_SIZE[1], available.height())),
    )


def size_class(width: int, height: int) -> str:
    """'wide' or 'compact': the arrangement a window of this size gets."""
    return "wide" if width >= WIDE[0] and height >= WIDE[1] else "compact"


def dock_name(title: str) -> str:
    """The dock's objectName, saveState's key: 'dock_functions', 'dock_memory', ..."""
    return f"dock_{title.split(':')[0].lower().replace(' ', '_').replace('?', '')}"


class WindowLayout(QObject):
    """The docks of one main window and the arrangement they are in."""

    def __init__(self, window: QMainWindow, panels: dict[str, QWidget]) -> None:
        super().__init__(window)
        self.window = window
        self.kind: str | None = None
        self.auto = True  # False once the user moves a dock: the layout is theirs
        self.presenting = False  # presentation mode: docks keep their places, sized for the heatmaps
        self._placing = False
        self._proportioned = (0, 0)  # the window size the docks were last sized for
        centre = QWidget()
        centre.setObjectName("centre")
        layout = QVBoxLayout(centre)
        layout.setContentsMargins(6, 6, 6, 0)
        layout.setSpacing(4)
        layout.addWidget(panels["banner"])
        layout.addWidget(panels["jacobians"], 1)
        window.setCentralWidget(centre)
        window.addToolBar(Qt.ToolBarArea.TopToolBarArea, panels["run_bar"])
        self.docks: dict[str, QDockWidget] = {}
        for title in DOCKS:
            self.add_dock(title, panels[PANELS[title]], scroll=PANELS[title] in SCROLLING)

    def add_dock(self, title: str, widget: QWidget, *, scroll: bool = False, beside: str | None = None) -> QDockWidget:
        """A dock for ``widget``; with ``beside`` (a dock's title), as a tab beside that dock (the
        Why? panel goes beside the memory study: next to the error map in the wide layout, among
        the tabs below it in the compact one)."""
        dock = QDockWidget(title, self.window)
        dock.setObjectName(dock_name(title))
        if scroll:
            area = QScrollArea()
            area.setWidgetResizable(True)
            area.setFrameShape(QFrame.Shape.NoFrame)
            area.setWidget(widget)
            widget = area
        dock.setWidget(widget)
        self.docks[title] = dock
        dock.dockLocationChanged.connect(self._on_user_moved)
        dock.topLevelChanged.connect(self._on_user_moved)
        if beside in self.docks:
            self._placing = True
            self.window.tabifyDockWidget(self.docks[beside], dock)
            self._placing = False
        elif self.kind is not None:
            self.place(self.kind)
        return dock

    def place(self, kind: str, *, keep_hidden: bool | None = None) -> None:
        """Put every dock where arrangement ``kind`` ('wide' or 'compact') has it; docks the user
        closed stay closed (``keep_hidden``; default: once the docks have been placed before)."""
        window, docks = self.window, self.docks
        left, bottom, right = (
            Qt.DockWidgetArea.LeftDockWidgetArea,
            Qt.DockWidgetArea.BottomDockWidgetArea,
            Qt.DockWidgetArea.RightDockWidgetArea,
        )
        self._placing = True
        keep = self.kind is not None if keep_hidden is None else keep_hidden
        hidden = {title for title, dock in docks.items() if keep and dock.isHidden()}
        extra = [t for t in docks if t not in DOCKS]  # added later (the Why? panel): beside the memory study
        for dock in docks.values():
            window.removeDockWidget(dock)
        window.setCorner(Qt.Corner.BottomLeftCorner, left)  # the left column runs the full height
        window.setCorner(Qt.Corner.TopLeftCorner, left)
        window.setCorner(Qt.Corner.BottomRightCorner, right)
        window.setCorner(Qt.Corner.TopRightCorner, right)
        if kind == "wide":
            for title in ("Functions", "Code", "Output"):
                window.addDockWidget(left, docks[title], Qt.Orientation.Vertical)
            window.addDockWidget(bottom, docks["Autograd graph"])
            window.addDockWidget(right, docks[MEMORY_DOCK])
            tabs = [MEMORY_DOCK, *extra]
        else:
            window.addDockWidget(left, docks["Functions"], Qt.Orientation.Vertical)
            window.addDockWidget(left, docks["Code"], Qt.Orientation.Vertical)
            window.addDockWidget(bottom, docks["Autograd graph"])
            tabs = ["Autograd graph", MEMORY_DOCK, "Output", *extra]
        for previous, title in itertools.pairwise(tabs):
            window.tabifyDockWidget(docks[previous], docks[title])
        for title, dock in docks.items():
            dock.setVisible(title not in hidden)
        docks[tabs[0]].raise_()
        if kind == "wide":
            docks["Autograd graph"].raise_()
        self.kind = kind
        self._proportion()
        self._placing = False

    def _proportion(self) -> None:
        """Size the docks as shares of the window, so a window made bigger gives the editor and
        the graph their share too (Qt would give all of it to the centre)."""
        window, docks, kind = self.window, self.docks, self.kind
        width, height = window.width(), window.height()
        self._proportioned = (width, height)
        if self.presenting:  # the code and the graph beside and below large heatmaps
            window.resizeDocks([docks["Code"]], [int(width * 0.28)], Qt.Orientation.Horizontal)
            window.resizeDocks([docks["Autograd graph"]], [int(height * 0.25)], Qt.Orientation.Vertical)
        elif kind == "wide":
            window.resizeDocks(
                [docks["Functions"], docks["Code"], docks["Output"]],
                [int(height * 0.26), int(height * 0.56), int(height * 0.12)],
                Qt.Orientation.Vertical,
            )
            window.resizeDocks([docks["Code"]], [int(width * 0.24)], Qt.Orientation.Horizontal)
            window.resizeDocks([docks["Autograd graph"]], [int(height * GRAPH_SHARE["wide"])], Qt.Orientation.Vertical)
            window.resizeDocks([docks[MEMORY_DOCK]], [int(width * 0.26)], Qt.Orientation.Horizontal)
        else:
            window.resizeDocks(
                [docks["Functions"], docks["Code"]], [int(height * 0.28), int(height * 0.72)], Qt.Orientation.Vertical
            )
            window.resizeDocks([docks["Code"]], [int(width * 0.3)], Qt.Orientation.Horizontal)
            window.resizeDocks([docks["Autograd graph"]], [int(height * GRAPH_SHARE["compact"])], Qt.Orientation.Vertical)

    def adapt(self) -> None:
        """The arrangement for the window's size, unless the user has arranged the docks."""
        kind = size_class(self.window.width(), self.window.height())
        if not self.auto and not self.presenting:
            return
        if kind != self.kind and not self.presenting:
            self.place(kind)
        elif self._proportioned != (self.window.width(), self.window.height()):
            self._placing = True
            self._proportion()
            self._placing = False

    def _on_user_moved(self, *_args) -> None:
        if not self._placing and self.kind is not None:
            self.auto = False


SAVE_DELAY_MS = 1000  # the layout and settings are written this long after the last change
_LAYOUT_EVENTS = (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.Hide)


class LayoutSaver(QObject):
    """Calls ``save`` a moment after the window or a dock is moved, resized, shown, hidden,
    docked or floated, or a watched state changes; a burst of changes (a drag) saves once."""

    def __init__(self, window: QMainWindow, docks: Iterable[QDockWidget], save: Callable[[], None]) -> None:
        super().__init__(window)
        self._save = save
        self._timer = QTimer(self, singleShot=True, interval=SAVE_DELAY_MS)
        self._timer.timeout.connect(self._save)
        window.installEventFilter(self)
        for dock in docks:
            dock.installEventFilter(self)
            dock.dockLocationChanged.connect(self.changed)
            dock.topLevelChanged.connect(self.changed)

    def watch(self, *objects: QObject) -> None:
        """Save after every signal of these objects whose name ends in ``_changed``."""
        for obj in objects:
            meta = obj.metaObject()
            for k in range(meta.methodOffset(), meta.methodCount()):
                method = meta.method(k)
                name = bytes(method.name()).decode()
                if method.methodType() == method.MethodType.Signal and name.endswith("_changed"):
                    getattr(obj, name).connect(self.changed)

    def changed(self, *_args) -> None:
        self._timer.start()

    @property
    def pending(self) -> bool:
        return self._timer.isActive()

    def stop(self) -> None:
        self._timer.stop()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in _LAYOUT_EVENTS:
            self._timer.start()
        return False
