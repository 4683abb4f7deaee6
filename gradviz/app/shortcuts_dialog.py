"""Help → Keyboard shortcuts (F1): every menu shortcut and the keys that are not menu items.

The list is a two-column table whose descriptions wrap, in a dialog sized to the screen the
window is on: as wide as the table wants (never wider than the screen, so nothing is cut on the
right: the descriptions wrap instead) and as tall as the table (never taller than the screen: the
table scrolls vertically). At 1280x720 the old fixed 640x720 dialog was taller than the screen's
room and cut its longest rows on the right.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QAction, QKeySequence, QTextDocument
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QScrollArea, QStyle, QVBoxLayout, QWidget

SCREEN_SHARE = 0.9  # of the screen's available width and height, at most (room for the frame)
FRAME_ROOM = 48  # px kept free above the dialog for its title bar and frame


def shortcut_rows(actions: Iterable[QAction], extra: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """(keys, what) for each action that has a shortcut, in menu order, then ``extra``."""
    rows = [
        (action.shortcut().toString(QKeySequence.SequenceFormat.NativeText), action.text().replace("&", ""))
        for action in actions
        if not action.shortcut().isEmpty()
    ]
    return rows + list(extra)


def table_html(rows: Iterable[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td><b>{escape(keys)}</b></td><td>{escape(what)}</td></tr>" for keys, what in rows)
    return f"<table cellspacing=4>{cells}</table>"


class ShortcutsDialog(QDialog):
    """The shortcuts table, wrapped and scrolled to fit ``available`` (default: the parent's
    screen's available geometry)."""

    def __init__(
        self, rows: Iterable[tuple[str, str]], parent: QWidget | None = None, *, available: QRect | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.label = QLabel(table_html(rows))
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.area = QScrollArea()
        self.area.setWidget(self.label)
        self.area.setWidgetResizable(True)
        self.area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # wrap, never cut
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.area, 1)
        layout.addWidget(buttons)
        self.fit(available)

    def fit(self, available: QRect | None = None) -> None:
        """Size for the table within ``available`` and centre on the parent (or the screen)."""
        if available is None:
            screen = (self.parentWidget() or self).screen()
            available = screen.availableGeometry()
        room_w = int(available.width() * SCREEN_SHARE)
        room_h = min(int(available.height() * SCREEN_SHARE), available.height() - FRAME_ROOM)
        doc = QTextDocument()
        doc.setDefaultFont(self.label.font())
        doc.setHtml(self.label.text())
        scrollbar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        margins = self.layout().contentsMargins()
        chrome_w = margins.left() + margins.right() + 2 * self.area.frameWidth() + scrollbar + 8
        width = min(int(doc.idealWidth()) + chrome_w, room_w)
        text_h = self.label.heightForWidth(width - chrome_w)
        buttons_h = self.layout().itemAt(1).sizeHint().height() + self.layout().spacing()
        chrome_h = margins.top() + margins.bottom() + 2 * self.area.frameWidth() + buttons_h + 4
        height = min(text_h + chrome_h, room_h)
        self.resize(width, height)
        centre = (self.parentWidget().frameGeometry() if self.parentWidget() else available).center()
        left = min(max(centre.x() - width // 2, available.left()), available.right() - width)
        top = min(max(centre.y() - height // 2, available.top()), available.bottom() - height - FRAME_ROOM)
        self.move(left, max(top, available.top()))  # move() places the frame, title bar included


def show_shortcuts(parent: QWidget, actions: Iterable[QAction], extra: Iterable[tuple[str, str]]) -> ShortcutsDialog:
    """Build, fit and show the dialog (not modal: the window stays usable beside it)."""
    dialog = ShortcutsDialog(shortcut_rows(actions, extra), parent)
    dialog.show()
    return dialog
