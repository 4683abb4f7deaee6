"""The words in and around the graph that exports carry with it: the node labels (TextItems from a
pool, placed by ``render.graph_labels``), the legend (the plot's title) and the "m of n labelled ·
zoom in" note in a row below the view, the last two in the longest wording that fits."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFont, QFontMetricsF

from gradviz.app.plot_style import text_width
from gradviz.app.theme import Theme, ViewSettings
from gradviz.render.graph_labels import LABEL_MARGIN
from gradviz.render.graph_text import KINDS

HINT_POINTS = 11
LABEL_POINTS = 12
LABEL_INK = "#222"
LABEL_FILL = (255, 255, 255, 215)  # labels sit on a white patch so crossing edges do not hide them
HINTS = (  # below the graph, never over it: the longest wording that fits
    "{m} of {n} nodes labelled · zoom in (mouse wheel) to label the rest",
    "{m} of {n} labelled · zoom in",
    "{m}/{n} labelled",
)
LEGEND = (
    ("your Function", "built-in op", "input (leaf)", "gradients flow ↓"),
    ("yours", "built-in", "input", "grads ↓"),
    ("yours", "op", "leaf", "↓"),
)


class _Note(pg.LabelItem):
    """A one-line note whose row never follows its text: as tall as a line, as wide as the view."""

    line_height = 20.0

    def updateMin(self) -> None:
        h = self.line_height
        self.setMinimumSize(0, h)
        self.setMaximumHeight(h)
        self._sizeHint = {
            Qt.SizeHint.MinimumSize: (0, h),
            Qt.SizeHint.PreferredSize: (0, h),
            Qt.SizeHint.MaximumSize: (-1, h),
            Qt.SizeHint.MinimumDescent: (0, 0),
        }
        self.updateGeometry()


def legend_text(words: tuple[str, ...], theme: Theme) -> str:
    """The legend's HTML: each kind's symbol in its colour and its words, then the flow."""
    symbols = "&nbsp;&nbsp;".join(
        f'<span style="color:{fill}; font-size:{theme.pt(15)}pt">{glyph}</span>&nbsp;{word}'
        for (_, _, fill, _), glyph, word in zip(KINDS.values(), "■●◆", words)
    )
    return f"{symbols}&nbsp;&nbsp;{words[-1]}"


class GraphNotes:
    """The legend and the label hint of one graph plot."""

    def __init__(self, plot: pg.PlotWidget, view: ViewSettings) -> None:
        self.plot, self.view = plot, view
        self.legend = -1  # which wording of the legend the title shows
        self.hint = _Note("", justify="left")
        plot.getPlotItem().layout.addItem(self.hint, 4, 1)

    def fit_legend(self) -> None:
        """The legend (the plot's title) in the longest wording that fits the plot's width."""
        theme = self.view.theme
        room = self.plot.width() - 12
        for choice, words in enumerate(LEGEND):
            self.plot.setTitle(legend_text(words, theme), color=theme.ink, size=f"{theme.pt(11)}pt")
            if choice == len(LEGEND) - 1 or self.plot.getPlotItem().titleLabel.item.boundingRect().width() <= room:
                break
        self.legend = choice

    def set_hint(self, labelled: int, n: int) -> None:
        """Below the graph (never over its edges): how many nodes have a label, when not all do,
        in the longest wording that fits the plot's width. Its row keeps its height when empty, so
        the view never changes size (and the labels never move) as the note comes and goes."""
        theme = self.view.theme
        if labelled >= n:
            self.hint.setText("", size=f"{theme.pt(HINT_POINTS)}pt")
            return
        room = self.plot.getPlotItem().width() - 8
        choice = next(
            (w for w in HINTS if text_width(w.format(m=n, n=n), theme.pt(HINT_POINTS)) <= room), HINTS[-1]
        )  # with m = n: no narrower than the text shown
        self.hint.setText(choice.format(m=labelled, n=n), color=theme.muted, size=f"{theme.pt(HINT_POINTS)}pt")

    def hint_text(self) -> str:
        """The note under the graph ('' when every node has its label)."""
        return self.hint.item.toPlainText()

    def apply_theme(self) -> None:
        """The legend refitted, and the note's row one line of its font, whatever it says."""
        self.fit_legend()
        self.hint.line_height = QFontMetricsF(self.view.theme.font(HINT_POINTS)).height() + 6
        self.hint.updateMin()


class NodeLabels:
    """The node labels on one plot: a font per kind of node (your Functions larger and bold), and
    TextItems made on first need and reused, so a pan or zoom makes no new items."""

    def __init__(self, plot: pg.PlotWidget, font: QFont) -> None:
        self.plot = plot
        self.fonts = {kind: QFont(font) for kind in KINDS}
        self.metrics = {kind: QFontMetricsF(f) for kind, f in self.fonts.items()}
        self._pool: list[pg.TextItem] = []
        self._shown: dict[int, pg.TextItem] = {}  # node id -> its label on screen

    def set_theme(self, theme: Theme) -> None:
        for kind, font in self.fonts.items():
            font.setPointSize(theme.pt(LABEL_POINTS + (1 if kind == "custom" else 0)))
            font.setBold(kind == "custom" or theme.high_contrast)
        self.metrics = {kind: QFontMetricsF(f) for kind, f in self.fonts.items()}

    def measure(self, kind: str, text: str) -> tuple[float, float]:
        """(width, height) px of ``text`` in the font of ``kind``'s labels, a line per ``\\n``."""
        metrics, lines = self.metrics[kind], text.split("\n")
        width = max(metrics.horizontalAdvance(line) for line in lines)
        return width, metrics.height() + (len(lines) - 1) * metrics.lineSpacing()

    def show(self, labels: list[tuple[int, str, str, float, float]]) -> None:
        """(node id, kind, text, x, y) of each label to show, centred there; the rest hidden."""
        while len(self._pool) < len(labels):
            label = pg.TextItem("", color=LABEL_INK, anchor=(0.5, 0.5), fill=pg.mkBrush(*LABEL_FILL))
            label.textItem.document().setDocumentMargin(LABEL_MARGIN)
            label.setZValue(4)
            self.plot.addItem(label, ignoreBounds=True)
            self._pool.append(label)
        self._shown = {}
        for label, (node, kind, text, x, y) in zip(self._pool, labels):
            label.setFont(self.fonts[kind])
            label.setText(text)
            label.setPos(QPointF(x, y))
            label.show()
            self._shown[node] = label
        for label in self._pool[len(labels) :]:
            label.hide()

    def shown(self) -> dict[int, pg.TextItem]:
        return dict(self._shown)
