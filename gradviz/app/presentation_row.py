"""Under the graph of the backward step-through while presenting: the analytic Jacobian with the row one
backward call fills marked, as the README promises ("at your Function's node, the row of J that
one backward call returns"). In the window the mark is on the Jacobians panel, beside the graph;
presentation shows one view at a time, so the backward view carries a copy of the map: the image
the Jacobians panel draws, its colours and the marked rows, copied at each step (no computing).
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from gradviz.app.panels.heatmap_plots import ROW_BAND
from gradviz.app.theme import ViewSettings

TITLE_POINTS = 12
NOTE_POINTS = 11
NO_ROW = "Step to your Function's node: its row of J is marked here."


class JacobianRow(QWidget):
    """The analytic map (no axes: the note says which row) with the marked row as a band."""

    def __init__(self, view: ViewSettings, jacobians: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("presentation_row_of_j")
        self.view, self.jacobians = view, jacobians
        self.title = QLabel("Row of J")
        self.title.setObjectName("presentation_row_title")
        self.title.setWordWrap(True)
        self.plot_widget = pg.PlotWidget(background="w")
        self.plot_widget.setMinimumSize(80, 80)
        self.plot_widget.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)  # the graph first
        plot = self.plot = self.plot_widget.getPlotItem()
        for axis in ("left", "bottom"):
            plot.hideAxis(axis)
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(False, False)
        plot.hideButtons()
        plot.invertY(True)  # row 0 at the top, as in the Jacobians view
        plot.setAspectLocked(True, ratio=1)
        self.image = pg.ImageItem(axisOrder="row-major")
        plot.addItem(self.image)
        self.band = pg.LinearRegionItem(
            orientation="horizontal", movable=False, brush=pg.mkBrush(*ROW_BAND, 90), pen=pg.mkPen(ROW_BAND, width=3)
        )
        self.band.setZValue(10)
        plot.addItem(self.band)
        self.note = QLabel(NO_ROW)
        self.note.setWordWrap(True)
        self.note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.note.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.note)
        for signal in (view.scale_changed, view.high_contrast_changed, view.min_points_changed):
            signal.connect(self._on_theme_changed)  # a bound method: gone with the stage
        self._on_theme_changed()
        self.refresh()

    def refresh(self) -> None:
        """Copy the analytic map and the marked rows from the Jacobians panel."""
        source = self.jacobians.analytic_image
        block = self.jacobians.current_block()
        rows = self.jacobians.marked_rows()
        if source.image is None or block is None:
            self.image.clear()
            self.band.hide()
            self.title.setText("Row of J")
            self.note.setText(NO_ROW)
            return
        cells = source.mapRectToParent(source.boundingRect())  # in cell coordinates, as drawn there
        self.image.setImage(source.image, autoLevels=False, levels=source.levels, rect=cells)
        self.image.setLookupTable(source.lut)
        self.plot.getViewBox().setRange(cells, padding=0.02)
        if rows is None:
            self.band.hide()
            self.title.setText("J (analytic)")
            self.note.setText(NO_ROW)
            return
        first, last = rows
        self.band.setRegion((first - 0.5, last + 0.5))
        self.band.show()
        self.title.setText(f"Row {first} of J" if first == last else f"Rows {first}–{last} of J")
        self.note.setText(self.jacobians.readout.text().split(" (marked)")[0] + ".")  # its first words: the room is the graph's

    def band_shown(self) -> tuple[float, float] | None:
        """The rows the band covers, or None (tests)."""
        return tuple(self.band.getRegion()) if self.band.isVisible() else None

    def _on_theme_changed(self, *_args) -> None:
        theme = self.view.theme
        self.title.setFont(theme.font(TITLE_POINTS, bold=True))
        self.note.setFont(theme.font(NOTE_POINTS))
