"""The main window. A first version: it opens; the side-by-side panels come next."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMainWindow


class MainWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("gradviz")
        self.resize(1280, 800)
        label = QLabel("gradviz: the side-by-side Jacobian view is coming.\nMeanwhile: gradviz check linear")
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setCentralWidget(label)
