"""Where the panels sit in the main window: the run bar on top, the banner and the Jacobians in the
centre, the picker, editor and output down the left, the graph below, the memory study on the right.
These are the first launch's sizes; afterwards QSettings brings back the user's own layout, which
``LayoutSaver`` writes a moment after each change (a crash keeps it, not only a clean exit)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QToolBar, QVBoxLayout, QWidget

DEFAULT_SIZE = (1680, 1020)  # shrunk to the screen, never below MIN_SIZE
MIN_SIZE = (1280, 800)
MEMORY_DOCK = "Memory: fused vs unfused conv-BN"


def default_size() -> tuple[int, int]:
    screen = QApplication.primaryScreen()
    if screen is None:
        return DEFAULT_SIZE
    available = screen.availableGeometry()
    return (
        max(MIN_SIZE[0], min(DEFAULT_SIZE[0], available.width())),
        max(MIN_SIZE[1], min(DEFAULT_SIZE[1], available.height())),
    )


def arrange(window: QMainWindow, panels: dict[str, QWidget]) -> dict[str, QDockWidget]:
    """Lay out ``panels`` (run_bar, banner, jacobians, picker, editor, output, graph, memory);
    return the docks by title."""
    toolbar = QToolBar("Run")
    toolbar.setObjectName("run_toolbar")
    toolbar.setMovable(False)
    toolbar.addWidget(panels["run_bar"])
    window.addToolBar(Qt.ToolBarArea.TopToolBarArea, toolbar)

    centre = QWidget()
    layout = QVBoxLayout(centre)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(panels["banner"])
    layout.addWidget(panels["jacobians"], 1)
    window.setCentralWidget(centre)

    left, bottom, right = (
        Qt.DockWidgetArea.LeftDockWidgetArea,
        Qt.DockWidgetArea.BottomDockWidgetArea,
        Qt.DockWidgetArea.RightDockWidgetArea,
    )
    docks = {}
    for title, name, area in (
        ("Functions", "picker", left),
        ("Code", "editor", left),
        ("Output", "output", left),
        ("Autograd graph", "graph", bottom),
        (MEMORY_DOCK, "memory", right),
    ):
        dock = QDockWidget(title, window)
        dock.setObjectName(f"dock_{title.split(':')[0].lower().replace(' ', '_')}")  # saveState's key
        dock.setWidget(panels[name])
        window.addDockWidget(area, dock)
        docks[title] = dock
    # the left column runs the full height; the bottom docks sit under the Jacobians only
    window.setCorner(Qt.Corner.BottomLeftCorner, left)
    height = window.height()
    window.resizeDocks(
        [docks["Functions"], docks["Code"], docks["Output"]], [250, height - 400, 110], Qt.Orientation.Vertical
    )
    window.resizeDocks([docks["Code"]], [410], Qt.Orientation.Horizontal)
    window.setCorner(Qt.Corner.BottomRightCorner, right)
    window.resizeDocks([docks["Autograd graph"]], [int(height * 0.36)], Qt.Orientation.Vertical)
    window.resizeDocks([docks[MEMORY_DOCK]], [440], Qt.Orientation.Horizontal)
    return docks


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
