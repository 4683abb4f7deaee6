"""The "Why?" panel: why a check fails, from an eps sweep.

It renders one ``SweepResult`` (the worker's "sweep" request measures it): on the left, the
Jacobian error of the selected block against eps on log-log axes, with its worst cells and the
slope-2 (truncation) and slope -1 (round-off) reference lines, the check's eps and the best one
marked; below it, the directional Taylor remainder against h with slope-2 (right backward) and
slope-1 (wrong backward) references. On the right, the verdict in words and the buttons that act
on it: re-run at the suggested eps, re-draw the inputs away from a kink, re-check in float64.
The buttons only emit signals; the window owns the settings and the runs. All the panel
computes is display prep: where to anchor a reference line.

It lives in a dock that may be a narrow tab (about 440 px at 1920x1080) or a short strip along
the bottom (1280x720), so it lays itself out for its width (``_arrange``): text and buttons
above the plots when narrow, beside them when wide; the dock scrolls for the height. A sweep
made for other code, file or settings is marked stale, with the window's own reason.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QBoxLayout,
    QComboBox,
    QLabel,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from gradviz.app.figures import save_png
from gradviz.app.panels.box_layout import Spacing, Stretch, column, row
from gradviz.app.panels.stale_note import StaleNote
from gradviz.app.panels.why_plots import (
    BEST_PEN,
    BLOCK_COLOUR,
    CELL_COLOURS,
    CURVATURE_COLOUR,
    EPS_PEN,
    ERROR_TITLE,
    ERROR_Y,
    FIGURE_MIN_HEIGHT,
    FIGURE_MIN_WIDTH,
    FLOOR_PEN,
    INK,
    NO_VALLEY,
    REFERENCE_PEN,
    REMAINDER_COLOUR,
    REMAINDER_TIP,
    REMAINDER_TITLE,
    REMAINDER_Y,
    VERDICT_COLOURS,
    WRONG_REFERENCE_PEN,
    fit_range,
    legend_html,
    plot_with_legend_below,
    positive,
    reference_line,
    set_title,
    slopes_text,
)
from gradviz.schema.precision import PrecisionCheck
from gradviz.schema.sweep import EPS_FIXABLE, BlockSweep, SweepResult, Verdict, jitter_for
from gradviz.schema.units import counted

__all__ = ["EMPTY_TEXT", "VERDICT_COLOURS", "WhyPanel", "positive", "reference_line"]

EMPTY_TEXT = "No sweep yet. Sweep the Function to see whether the backward or the finite difference is wrong."
OVERALL = (-1, -1)
SIDE_BY_SIDE_WIDTH = 760  # narrower than this: the verdict and buttons above the plots, not beside them
SIDE_MIN_WIDTH = 260  # the widest button's text and the block box
PLOTS_IN_A_ROW_WIDTH = 1300  # wider than this: the two plots side by side, whatever the height


class WhyPanel(QWidget):
    """One sweep, drawn for the selected block; signals that ask the window for the next run."""

    rerun_at_eps = Signal(float)  # re-run the check with this eps
    redraw_requested = Signal(float)  # re-run with the inputs moved off kinks by this jitter
    use_float64_requested = Signal()  # re-run the check in float64
    sweep_requested = Signal(object)  # (output, input): sweep this block cell by cell
    sweep_all_requested = Signal()  # sweep the Function on screen, passing or failing
    block_changed = Signal(int, int)  # the user picked another block (-1, -1: the whole Function)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._sweep: SweepResult | None = None
        self._precision: PrecisionCheck | None = None
        self._block: tuple[int, int] = OVERALL
        self._cell: tuple[int, int] | None = None
        self._stale: str | None = None
        self._reruns = True  # the re-run buttons may re-run the check on screen (not an audit node's)
        self._error_curves: dict[str, pg.PlotDataItem] = {}
        self._remainder_curves: dict[str, pg.PlotDataItem] = {}
        self._build()
        self.set_result(None)

    # building ---------------------------------------------------------------------------------

    def _build(self) -> None:
        tick_font = QFont()
        tick_font.setPointSize(10)
        # the plots are built when first on screen or drawn into, and drawn from the sweep held here
        self.error_figure, self.error_page, self.error_legend = plot_with_legend_below(
            ERROR_TITLE, "eps", ERROR_Y, tick_font
        )
        self.remainder_figure, self.remainder_page, self.remainder_legend = plot_with_legend_below(
            REMAINDER_TITLE, "h", REMAINDER_Y, tick_font
        )
        self.error_page.built.connect(lambda _plot: self._draw_errors(self._current()))
        self.remainder_page.built.connect(lambda _plot: self._draw_remainder(self._current()))
        self.remainder_figure.setToolTip(REMAINDER_TIP)
        self.plots_area = QWidget()
        self._plots_layout = QBoxLayout(QBoxLayout.Direction.TopToBottom, self.plots_area)
        self._plots_layout.setContentsMargins(0, 0, 0, 0)
        self._plots_layout.addWidget(self.error_figure, 1)
        self._plots_layout.addWidget(self.remainder_figure, 1)

        self.stale_label = StaleNote()
        self.block_combo = QComboBox()
        self.block_combo.setToolTip("The block whose curves are drawn")
        self.block_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.block_combo.setMinimumContentsLength(12)
        self.block_combo.currentIndexChanged.connect(self._on_block_combo_changed)
        self.headline = QLabel()
        font = self.headline.font()
        font.setPointSize(15)
        font.setBold(True)
        self.headline.setFont(font)
        self.headline.setWordWrap(True)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.slopes = QLabel()
        self.slopes.setWordWrap(True)
        self.slopes.setStyleSheet("color: #333")
        self.precision_label = QLabel()
        self.precision_label.setWordWrap(True)
        self.precision_label.setStyleSheet("color: #1565c0")
        self.cell_label = QLabel()
        self.cell_label.setWordWrap(True)
        self.cell_label.setStyleSheet("color: #555")

        self.sweep_all_button = QPushButton("Sweep eps for this Function")
        self.sweep_all_button.setToolTip(
            "Measure the Jacobian error at eps from 0.1 to 1e-10, passing or failing (in the background)"
        )
        self.rerun_button = QPushButton("Re-run at the suggested eps")
        self.rerun_button.setToolTip(
            "Run the check once more with the eps at the bottom of the error valley (the run bar keeps its eps)"
        )
        self.redraw_button = QPushButton("Re-draw inputs away from the kink")
        self.redraw_button.setToolTip("Run the check again with every input element moved a little (jitter)")
        self.float64_button = QPushButton("Re-check in float64")
        self.float64_button.setToolTip("Run the same check in float64, where eps and tolerance are not the problem")
        self.sweep_button = QPushButton("Sweep this block cell by cell")
        self.sweep_button.setToolTip("Only one direction was measured for this block; sweep every cell")
        self.buttons = (
            self.sweep_all_button, self.rerun_button, self.redraw_button, self.float64_button, self.sweep_button,
        )  # fmt: skip
        for button in self.buttons:
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.sweep_all_button.clicked.connect(self.sweep_all_requested.emit)
        self.rerun_button.clicked.connect(self._on_rerun_clicked)
        self.redraw_button.clicked.connect(self._on_redraw_clicked)
        self.float64_button.clicked.connect(self.use_float64_requested.emit)
        self.sweep_button.clicked.connect(self._on_sweep_clicked)

        block_row = row(QLabel("block"), (self.block_combo, 1))
        side = column(
            self.sweep_all_button,  # first: in a short dock it shows without scrolling
            self.stale_label, block_row, self.headline, self.message, self.slopes, self.precision_label,
            self.cell_label, Spacing(8), *self.buttons[1:], Stretch(1),
        )  # fmt: skip
        side.setContentsMargins(8, 4, 4, 4)
        self.side = QWidget()
        self.side.setLayout(side)
        self.side.setMinimumWidth(SIDE_MIN_WIDTH)

        self._layout = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.addWidget(self.plots_area, 3)
        self._layout.addWidget(self.side, 2)
        self._arrange()

    def _arrange(self, width: int | None = None) -> None:
        """Lay out for the room the dock gives: narrow (a tab beside the memory study), the verdict
        and its buttons above the plots, full width, so no text is cut; wider, beside them. The
        two plots go side by side when they fit and the dock is short (a strip along the bottom)
        or very wide, so a plot keeps a usable height; what is left over, the dock scrolls."""
        width = self.width() if width is None else width
        viewport = self.parentWidget()
        height = viewport.height() if viewport is not None else self.height()
        short = height < 2 * FIGURE_MIN_HEIGHT + 200
        row = width >= 2 * FIGURE_MIN_WIDTH + 40 and (short or width >= PLOTS_IN_A_ROW_WIDTH)
        beside = width >= (SIDE_BY_SIDE_WIDTH if not row else 2 * FIGURE_MIN_WIDTH + SIDE_MIN_WIDTH + 40)
        if beside == (self._layout.direction() == QBoxLayout.Direction.TopToBottom):
            self._layout.removeWidget(self.plots_area)
            self._layout.removeWidget(self.side)
            if beside:
                self._layout.setDirection(QBoxLayout.Direction.LeftToRight)
                self._layout.addWidget(self.plots_area, 3)
                self._layout.addWidget(self.side, 2)
                self.side.setMaximumWidth(460)
            else:
                self._layout.setDirection(QBoxLayout.Direction.TopToBottom)
                self._layout.addWidget(self.side, 0)
                self._layout.addWidget(self.plots_area, 1)
                self.side.setMaximumWidth(16777215)
        self._plots_layout.setDirection(
            QBoxLayout.Direction.LeftToRight if row else QBoxLayout.Direction.TopToBottom
        )

    def resizeEvent(self, event) -> None:
        self._arrange(event.size().width())
        super().resizeEvent(event)

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ParentChange and self.parentWidget() is not None:
            self.parentWidget().installEventFilter(self)  # the scroll area's viewport: its height counts
        return super().event(event)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.parentWidget() and event.type() == QEvent.Type.Resize:
            self._arrange()
        return super().eventFilter(watched, event)

    # the model in -------------------------------------------------------------------------------

    def set_result(self, sweep: SweepResult | None, precision: PrecisionCheck | None = None) -> None:
        """Show ``sweep`` (and the check's float64 re-check, if any); None: the empty state."""
        self._sweep, self._precision = sweep, precision
        self.block_combo.blockSignals(True)
        self.block_combo.clear()
        if sweep is not None:
            for b in [sweep.overall, *sweep.blocks]:
                self.block_combo.addItem(b.title, (b.output, b.input))
        self.block_combo.blockSignals(False)
        if sweep is not None and sweep.block(*self._block) is None and self._block != OVERALL:
            self._block = OVERALL
        self._cell = None
        self.set_stale(None)
        self._show()

    def select_block(self, output: int, input: int) -> None:
        """Draw block (output, input), as the Jacobian panel's selection says."""
        self._block = (output, input)
        self._cell = None
        self._show()

    def select_cell(self, row: int | None, col: int | None) -> None:
        """Bring cell (row, col) of the selected block forward when its curve was kept."""
        self._cell = None if row is None or col is None else (row, col)
        self._draw_errors(self._current())
        self._show_cell(self._current())
        self._hide_empty()

    def set_stale(self, reason: str | None) -> None:
        """Mark the sweep on screen as made for other code, file or settings (``reason``, the
        window's words, as for every other view), or clear the mark with None."""
        self._stale = reason if self._sweep is not None else None
        self.stale_label.set_reason(f"Stale: {self._stale}" if self._stale else None)

    def stale_text(self) -> str | None:
        return self._stale

    def show_message(self, text: str) -> None:
        """A line about the sweep in flight or why it could not run, in place of the verdict's."""
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def set_reruns_allowed(self, allowed: bool, why: str = "") -> None:
        """Whether the re-run buttons may re-run the check on screen; ``why`` says why not."""
        self._reruns = allowed
        for button in (self.rerun_button, self.redraw_button, self.float64_button):
            button.setToolTip(why)
        self._show_buttons(self._current())

    def set_sweep_allowed(self, allowed: bool, why: str = "") -> None:
        """Whether the Function on screen can be swept now; ``why`` not, as the button's text."""
        self.sweep_all_button.setEnabled(allowed)
        self.sweep_all_button.setText("Sweep eps for this Function" if allowed or not why else why)

    def result(self) -> SweepResult | None:
        return self._sweep

    def block(self) -> tuple[int, int]:
        return self._block

    def headline_text(self) -> str:
        return self.headline.text()

    # the plots, built on first use (``LazyPage``) --------------------------------------------------

    @property
    def error_plot(self) -> pg.PlotItem:
        return self.error_page.content().getPlotItem()

    @property
    def remainder_plot(self) -> pg.PlotItem:
        return self.remainder_page.content().getPlotItem()

    @property
    def error_curves(self) -> dict[str, pg.PlotDataItem]:
        """The error plot's curves by name, as drawn for the block on screen."""
        self.error_page.content()
        return self._error_curves

    @property
    def remainder_curves(self) -> dict[str, pg.PlotDataItem]:
        self.remainder_page.content()
        return self._remainder_curves

    def message_text(self) -> str:
        return self.message.text()

    def export_png(self, path: str) -> None:
        save_png(self.grab(), path)

    # drawing --------------------------------------------------------------------------------------

    def _current(self) -> BlockSweep | None:
        if self._sweep is None:
            return None
        if self._block == OVERALL:
            return self._sweep.overall
        return self._sweep.block(*self._block) or self._sweep.overall

    def _show(self) -> None:
        b = self._current()
        index = next(
            (k for k in range(self.block_combo.count()) if tuple(self.block_combo.itemData(k)) == self._block), 0
        )
        self.block_combo.blockSignals(True)
        self.block_combo.setCurrentIndex(max(index, 0))
        self.block_combo.blockSignals(False)
        self.block_combo.setEnabled(b is not None)
        self._draw_errors(b)
        self._draw_remainder(b)
        self._show_text(b)
        self._show_buttons(b)
        self._show_cell(b)
        self._hide_empty()

    def _hide_empty(self) -> None:
        """An empty text takes no line: the buttons stay right under the verdict."""
        for label in (self.message, self.slopes, self.precision_label, self.cell_label):
            label.setVisible(bool(label.text()))

    def _show_text(self, b: BlockSweep | None) -> None:
        sweep = self._sweep
        if sweep is None or b is None:
            self.headline.setText("Why?")
            self.headline.setStyleSheet(f"color: {INK}")
            self.message.setText(EMPTY_TEXT)
            self.slopes.setText("")
            self.precision_label.setText(self._precision.message if self._precision else "")
            return
        verdict = sweep.verdict if b is sweep.overall else b.verdict
        self.headline.setText(verdict.headline[:1].upper() + verdict.headline[1:])
        self.headline.setStyleSheet(f"color: {VERDICT_COLOURS[verdict]}")
        text = sweep.message if b is sweep.overall else b.message.replace(f"{b.title}: ", "", 1)
        self.message.setText(text)
        self.slopes.setText(slopes_text(b, sweep))
        self.precision_label.setText(self._precision.message if self._precision else "")

    def _show_buttons(self, b: BlockSweep | None) -> None:
        sweep = self._sweep
        best = sweep.best_eps if sweep is not None else None
        fixable = sweep is not None and sweep.verdict in EPS_FIXABLE and best is not None
        self.rerun_button.setEnabled(fixable and self._reruns)
        self.rerun_button.setText(f"Re-run at eps={best:g}" if fixable else "Re-run at the suggested eps")
        kink = sweep is not None and any(
            x.verdict == Verdict.NON_DIFFERENTIABLE for x in [sweep.overall, *sweep.blocks]
        )
        self.redraw_button.setEnabled(kink and self._reruns)
        low = sweep is not None and sweep.dtype != "float64"
        low = low or (self._precision is not None and self._precision.dtype != "float64")
        self.float64_button.setEnabled(low and self._reruns)
        self.float64_button.setVisible(low)
        narrow = b is not None and b is not (sweep.overall if sweep else None) and not b.swept
        self.sweep_button.setVisible(narrow)

    def _show_cell(self, b: BlockSweep | None) -> None:
        if b is None or self._cell is None or not b.swept:
            self.cell_label.setText("")
            return
        kept = next((c for c in b.cells if (c.row, c.col) == self._cell), None)
        if kept is None:
            self.cell_label.setText(
                f"Cell {self._cell[0]}, {self._cell[1]} is not among the "
                f"{counted(len(b.cells), 'worst cell')} whose curves were kept."
            )
        else:
            self.cell_label.setText(f"Highlighted: {kept.label} (analytic {kept.analytic:.4g}).")

    def _draw_errors(self, b: BlockSweep | None) -> None:
        if not self.error_page.is_built():
            return  # drawn when built
        plot = self.error_plot
        self._error_curves = curves = cleared(plot, self.error_legend)
        sweep = self._sweep
        if sweep is None or b is None or not b.swept:
            if sweep is not None and b is not None:
                set_title(plot, "Not swept for this block")
            return
        set_title(plot, ERROR_TITLE)
        steps = sweep.steps
        curves["block"] = main_curve(plot, steps, b.errors, BLOCK_COLOUR, f"{b.title}, largest")
        for k, cell in enumerate(b.cells):
            selected = self._cell == (cell.row, cell.col)
            pen = pg.mkPen(CELL_COLOURS[k % len(CELL_COLOURS)], width=3 if selected else 1.3)
            curves[cell.label] = plot.plot(
                steps, positive(cell.errors), pen=pen, connect="finite", name=cell.label
            )
        # a valley to mark only where the backward is right: a wrong one's error is flat
        best = steps.index(b.best_eps) if b.best_eps in steps and b.verdict not in NO_VALLEY else None
        anchor = [e if e is not None and math.isfinite(e) and e > 0 else None for e in b.errors]
        if best is not None and anchor[best] is not None:
            for slope, label in ((2, "slope 2: truncation"), (-1, "slope −1: round-off")):
                xs, ys = reference_line(steps, anchor, slope, best)
                curves[label] = plot.plot(xs, ys, pen=REFERENCE_PEN, name=label)
            plot.addItem(pg.InfiniteLine(math.log10(b.best_eps), angle=90, pen=BEST_PEN))
        plot.addItem(pg.InfiniteLine(math.log10(sweep.eps), angle=90, pen=EPS_PEN))
        entries = [(item.opts["pen"], item.name() or label) for label, item in curves.items()]
        entries.append((EPS_PEN, f"check's eps {sweep.eps:g}"))
        if best is not None:
            entries.append((BEST_PEN, f"best eps {b.best_eps:g}"))
        self.error_legend.setText(legend_html(entries))
        fit_range(plot, steps, [b.errors, *[c.errors for c in b.cells]])

    def _draw_remainder(self, b: BlockSweep | None) -> None:
        if not self.remainder_page.is_built():
            return  # drawn when built
        plot = self.remainder_plot
        self._remainder_curves = curves = cleared(plot, self.remainder_legend)
        sweep = self._sweep
        if sweep is None or b is None:
            return
        steps = sweep.steps
        curves["remainder"] = main_curve(plot, steps, b.remainder, REMAINDER_COLOUR, "remainder")
        curves["curvature"] = plot.plot(
            steps,
            positive(b.curvature),
            pen=pg.mkPen(CURVATURE_COLOUR, width=1.5, style=Qt.PenStyle.DashLine),
            connect="finite",
            name="second difference",
        )
        values = positive(b.remainder)
        clean = [k for k, v in enumerate(values) if np.isfinite(v) and v > 10 * b.floor]
        if clean:
            at = clean[0]  # anchor the references at the largest clean step
            for slope, label in ((2, "slope 2: J right"), (1, "slope 1: J wrong")):
                xs, ys = reference_line(steps, list(values), slope, at)
                pen = REFERENCE_PEN if slope == 2 else WRONG_REFERENCE_PEN
                curves[label] = plot.plot(xs, ys, pen=pen, name=label)
        if b.floor > 0:
            curves["floor"] = plot.plot(
                [min(steps), max(steps)], [b.floor, b.floor], pen=FLOOR_PEN, name="round-off level (estimated)"
            )
        self.remainder_legend.setText(
            legend_html([(item.opts["pen"], item.name() or label) for label, item in curves.items()])
        )
        fit_range(plot, steps, [b.remainder, b.curvature, [b.floor]])

    # the user's actions out ---------------------------------------------------------------------

    def _on_block_combo_changed(self, index: int) -> None:
        data = self.block_combo.itemData(index)
        if data is None:
            return
        self._block = tuple(data)
        self._cell = None
        self._show()
        self.block_changed.emit(*self._block)

    def _on_rerun_clicked(self) -> None:
        if self._sweep is not None and self._sweep.best_eps is not None:
            self.rerun_at_eps.emit(float(self._sweep.best_eps))

    def _on_redraw_clicked(self) -> None:
        if self._sweep is not None:
            self.redraw_requested.emit(jitter_for(self._sweep.eps))

    def _on_sweep_clicked(self) -> None:
        if self._block != OVERALL:
            self.sweep_requested.emit(self._block)


def main_curve(plot: pg.PlotItem, steps: list[float], values: list, colour: str, name: str) -> pg.PlotDataItem:
    """A plot's main curve: thick, with a dot at each step, gaps where a value is not positive."""
    return plot.plot(
        steps,
        positive(values),
        pen=pg.mkPen(colour, width=3),
        symbol="o",
        symbolSize=6,
        symbolBrush=colour,
        symbolPen=None,
        connect="finite",
        name=name,
    )


def cleared(plot: pg.PlotItem, legend: QLabel) -> dict:
    """Empty ``plot`` and its ``legend`` for a new drawing; returns the new (empty) curves by name."""
    plot.clear()
    legend.setText("")
    return {}
