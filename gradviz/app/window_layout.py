"""Where the panels sit in the main window: the run bar on top, the banner and the Jacobians in the
centre, the picker, editor and output down the left, the graph below, the memory study on the right.
These are the first launch's sizes; afterwards QSettings brings back the user's own layout."""

from __future__ import annotations

from PySide6.QtCore import Qt
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
