"""File → Export…: which figures, in which formats, at which size, into which folder; and the
numbers behind them (CSV and .npz). It starts in the folder used last."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.figures import DEFAULT_SIZE, FORMATS

FIGURE_LABELS = {
    "jacobians": "the three heatmaps",
    "error_map": "the error map alone",
    "graph": "the autograd graph",
    "memory": "memory: bars and sweep",
    "memory_bars": "memory: bars",
    "memory_sweep": "memory: sweep",
    "why": "Why?: error against eps, Taylor remainder",
}


@dataclass(frozen=True)
class ExportChoice:
    folder: Path
    names: tuple[str, ...]
    formats: tuple[str, ...]
    size: tuple[int, int]
    data: bool  # the Jacobians, error map and failing mask as CSV and .npz


class ExportDialog(QDialog):
    def __init__(self, parent: QWidget | None, folder: str, figures: dict[str, bool], *, data: bool = True) -> None:
        """``figures``: each figure's name and whether there is something to draw for it."""
        super().__init__(parent)
        self.setWindowTitle("Export figures and data")
        self.folder = QLineEdit(folder)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        where = QHBoxLayout()
        where.addWidget(self.folder, 1)
        where.addWidget(browse)

        self.figure_boxes: dict[str, QCheckBox] = {}
        grid = QGridLayout()
        for k, (name, available) in enumerate(figures.items()):
            box = QCheckBox(FIGURE_LABELS.get(name, name))
            box.setChecked(available and name in ("jacobians", "graph", "memory", "why"))
            box.setEnabled(available)
            if not available:
                box.setToolTip("Nothing to draw yet: run a check (or Measure) first.")
            grid.addWidget(box, k // 2, k % 2)
            self.figure_boxes[name] = box
        self.format_boxes = {fmt: QCheckBox(fmt.upper()) for fmt in FORMATS}
        self.format_boxes["png"].setChecked(True)
        formats = QHBoxLayout()
        for box in self.format_boxes.values():
            formats.addWidget(box)
        formats.addStretch(1)
        self.width_box, self.height_box = QSpinBox(), QSpinBox()
        for box, value in zip((self.width_box, self.height_box), DEFAULT_SIZE):
            box.setRange(200, 8000)
            box.setSuffix(" px")
            box.setValue(value)
        size = QHBoxLayout()
        size.addWidget(self.width_box)
        size.addWidget(QLabel("×"))
        size.addWidget(self.height_box)
        size.addStretch(1)
        self.data_box = QCheckBox("the Jacobians, error map and failing mask as CSV and .npz")
        self.data_box.setChecked(data)
        self.data_box.setToolTip(
            "One CSV per block and array: a header row (the output and input it is, then the column "
            "numbers), then one line per output element: its row number and one value per input element."
        )
        self.data_box.setEnabled(data)

        form = QFormLayout()
        form.addRow("Folder", where)
        form.addRow("Figures", grid)
        form.addRow("Formats", formats)
        form.addRow("Size", size)
        form.addRow("Data", self.data_box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def choice(self) -> ExportChoice:
        return ExportChoice(
            folder=Path(self.folder.text()).expanduser(),
            names=tuple(name for name, box in self.figure_boxes.items() if box.isChecked() and box.isEnabled()),
            formats=tuple(fmt for fmt, box in self.format_boxes.items() if box.isChecked()),
            size=(self.width_box.value(), self.height_box.value()),
            data=self.data_box.isChecked() and self.data_box.isEnabled(),
        )

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export to folder", self.folder.text())
        if folder:
            self.folder.setText(folder)
