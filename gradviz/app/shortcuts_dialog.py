"""Help → Keyboard shortcuts (F1): every menu shortcut and the keys that are not menu items.

The list is a two-column table whose descriptions wrap, in a dialog sized to the screen the
window is on: as wide as the table wants (never wider than the screen, so nothing is cut on the
right: the descriptions wrap instead) and as tall as the table (never taller than the screen: the
table scrolls vertically). At 1280x720 a fixed 640x720 dialog would be taller than the screen's
room and cut its longest rows on the right.

The room is the available geometry of the parent's screen, and it is the frame (title bar and
borders, which the window manager draws) that must fit in it, not only the client area: a dialog
fitted to a room larger than its real screen (a caller's ``available`` of 1920x1080 on a 1280x720
projector) came out taller than the screen, and openbox pushed its title bar above the top.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from PySide6.QtCore import QMargins, QRect, QSize, Qt
from PySide6.QtGui import QAction, QKeySequence, QTextDocument
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QScrollArea, QStyle, QVBoxLayout, QWidget

SCREEN_SHARE = 0.9  # of the screen's available width and height, at most, for the frame
# the frame a window manager draws, until the dialog or its parent has one to measure (a title bar
# and thin borders: openbox's are 20 px and 1 px)
FRAME_GUESS = QMargins(4, 32, 4, 8)


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


def screen_room(dialog: QWidget, available: QRect | None = None) -> QRect:
    """The available geometry of the dialog's parent's screen (its own without a parent),
    intersected with ``available`` (the whole screen where they do not meet)."""
    screen = (dialog.parentWidget() or dialog).screen().availableGeometry()
    both = screen if available is None else screen.intersected(available)
    return screen if both.isEmpty() else both


class FittedTextDialog(QDialog):
    """Rich text, wrapped and scrolled to fit ``available`` (default: the parent's screen's
    available geometry), with a Close button; links open in the system's browser."""

    def __init__(
        self, title: str, html: str, parent: QWidget | None = None, *, available: QRect | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.label = QLabel(html)
        self.label.setOpenExternalLinks(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
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
        """Size for the table and centre on the parent, frame included, within the parent's
        screen's available geometry (narrowed to ``available`` where given: a caller may ask for
        less room than the screen has, never for more)."""
        room = self.room(available)
        frame = self.frame_margins()
        extra_w, extra_h = frame.left() + frame.right(), frame.top() + frame.bottom()
        size = self.content_size(
            QSize(int(room.width() * SCREEN_SHARE) - extra_w, int(room.height() * SCREEN_SHARE) - extra_h)
        )
        self.resize(size)
        outer = QRect(0, 0, size.width() + extra_w, size.height() + extra_h)
        parent = self.parentWidget()
        outer.moveCenter((parent.frameGeometry() if parent else room).center())
        left = max(min(outer.left(), room.right() + 1 - outer.width()), room.left())
        top = max(min(outer.top(), room.bottom() + 1 - outer.height()), room.top())
        self.move(left, top)  # move() places the frame, title bar included

    def room(self, available: QRect | None = None) -> QRect:
        return screen_room(self, available)

    def frame_margins(self) -> QMargins:
        """The window manager's frame around this dialog: measured once it has one; before that
        the parent's (a window manager frames a dialog as it frames its window); else a guess."""
        for window in (self, self.parentWidget()):
            if window is not None and window.isVisible() and window.frameGeometry() != window.geometry():
                outer, inner = window.frameGeometry(), window.geometry()
                return QMargins(
                    inner.left() - outer.left(), inner.top() - outer.top(),
                    outer.right() - inner.right(), outer.bottom() - inner.bottom(),
                )  # fmt: skip
        return FRAME_GUESS

    def content_size(self, most: QSize) -> QSize:
        """The client size the table wants, at most ``most``: as wide as its widest row, then as
        tall as the wrapped rows (the table scrolls where that is taller than ``most``)."""
        doc = QTextDocument()
        doc.setDefaultFont(self.label.font())
        doc.setHtml(self.label.text())
        scrollbar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        margins = self.layout().contentsMargins()
        chrome_w = margins.left() + margins.right() + 2 * self.area.frameWidth() + scrollbar + 8
        width = min(int(doc.idealWidth()) + chrome_w, most.width())
        text_h = self.label.heightForWidth(width - chrome_w)
        buttons_h = self.layout().itemAt(1).sizeHint().height() + self.layout().spacing()
        chrome_h = margins.top() + margins.bottom() + 2 * self.area.frameWidth() + buttons_h + 4
        return QSize(width, min(text_h + chrome_h, most.height()))


class ShortcutsDialog(FittedTextDialog):
    """The shortcuts table, fitted to the screen."""

    def __init__(
        self, rows: Iterable[tuple[str, str]], parent: QWidget | None = None, *, available: QRect | None = None
    ) -> None:
        super().__init__("Keyboard shortcuts", table_html(rows), parent, available=available)


def show_shortcuts(parent: QWidget, actions: Iterable[QAction], extra: Iterable[tuple[str, str]]) -> ShortcutsDialog:
    """Build, fit and show the dialog (not modal: the window stays usable beside it)."""
    dialog = ShortcutsDialog(shortcut_rows(actions, extra), parent)
    dialog.show()
    return dialog
