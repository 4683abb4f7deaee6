"""The stage of presentation mode: one view at a time, full screen, beside a bar that says which
view of how many is on and holds the clicker's buttons (a column on the left: a 720-line screen
has height to spare for nothing, the heatmaps need all of it).

A 1280x720 projector cannot show the whole window at a size a room reads (every text 24 px,
heatmaps 300 px tall), so the stage shows one panel alone: the code, the Jacobians (the banner
and the heatmaps), the backward step-through (the graph) or the memory study. The panels are
lent to the stage while presenting and given back, unchanged, when it ends (``hold`` /
``release``); the stage computes nothing and decides nothing (the ``Presenter`` does).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.presenter import VIEW_TITLES, VIEWS
from gradviz.app.theme import ViewSettings

BAR_POINTS = 9  # base size of the bar's texts: the presentation floor (24 px), so the bar fits 1280 px


class PresentationStage(QWidget):
    """The window's central widget while presenting: the bar, then the view shown."""

    view_requested = Signal(str)  # a view's button was pressed
    resized = Signal()

    def __init__(self, view: ViewSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("centre")  # the high-contrast style sheet's white background
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the clicker's arrows reach the presenter, not a field
        self.view = view
        self.bar = QWidget()
        self.bar.setObjectName("presentation_bar")
        bar = QVBoxLayout(self.bar)
        bar.setContentsMargins(4, 4, 4, 4)
        bar.setSpacing(4)
        self.position = QLabel("")  # "2 / 4": which view of how many
        self.position.setObjectName("presentation_position")
        self.position.setAlignment(Qt.AlignmentFlag.AlignCenter)
        bar.addWidget(self.position)
        self.view_buttons: dict[str, QToolButton] = {}
        self._group = QButtonGroup(self)
        self._group.setExclusive(True)
        for name in VIEWS:
            button = self._button(VIEW_TITLES[name], f"Show the {VIEW_TITLES[name].lower()} view")
            button.setCheckable(True)
            button.clicked.connect(lambda _checked=False, name=name: self.view_requested.emit(name))
            self._group.addButton(button)
            self.view_buttons[name] = button
            bar.addWidget(button)
        # what the last key did, and the window's other status messages (its status bar is hidden)
        self.said = QLabel("")
        self.said.setObjectName("presentation_said")
        self.said.setWordWrap(True)
        self.said.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignHCenter)
        self.said.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the bar
        self.said.hide()
        bar.addSpacing(8)
        bar.addWidget(self.said)
        bar.addStretch(1)
        self.controls: dict[str, QToolButton] = {}
        self._bar_layout = bar
        self.pages = QStackedWidget()
        self._holders: dict[str, QVBoxLayout] = {}
        for name in VIEWS:
            page = QWidget()
            page.setObjectName(f"presentation_{name}")
            holder = QVBoxLayout(page)
            holder.setContentsMargins(0, 4, 4, 4)
            self._holders[name] = holder
            self.pages.addWidget(page)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.bar)
        layout.addWidget(self.pages, 1)
        self._current = VIEWS[0]
        self.show_view(VIEWS[0])
        for signal in (view.scale_changed, view.high_contrast_changed, view.min_points_changed):
            signal.connect(self._on_theme_changed)  # a bound method: gone with the stage
        self._on_theme_changed()

    def _button(self, text: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)  # one column, one width
        return button

    def add_control(self, name: str, text: str, tip: str, slot: Callable[[], None], *, checkable: bool = False) -> QToolButton:
        """A button at the bar's right end (back, next, text size, quiz, leave)."""
        button = self._button(text, tip)
        button.setCheckable(checkable)
        button.clicked.connect(lambda _checked=False: slot())
        self._bar_layout.addWidget(button)
        self.controls[name] = button
        button.setFont(self.view.theme.font(BAR_POINTS))
        return button

    # the panels, lent while presenting ----------------------------------------------------------

    def hold(self, name: str, widget: QWidget) -> None:
        """Show ``widget`` as view ``name`` (it leaves wherever it was)."""
        self._holders[name].addWidget(widget, 1)
        widget.show()

    def release(self, name: str) -> QWidget | None:
        """Take view ``name``'s widget out again (to give it back to its dock)."""
        holder = self._holders[name]
        item = holder.takeAt(0)
        widget = item.widget() if item is not None else None
        if widget is not None:
            widget.setParent(None)
        return widget

    def held(self, name: str) -> QWidget | None:
        item = self._holders[name].itemAt(0)
        return item.widget() if item is not None else None

    # which view is on ---------------------------------------------------------------------------

    @property
    def current(self) -> str:
        return self._current

    def show_view(self, name: str) -> None:
        """Show view ``name`` alone; the bar says which of how many."""
        k = VIEWS.index(name)
        self._current = name
        # a hidden view's minimum (the memory study, arranged for a size it no longer has) must not
        # make the stage need more than the screen: only the view shown counts
        for j in range(self.pages.count()):
            policy = QSizePolicy.Policy.Preferred if j == k else QSizePolicy.Policy.Ignored
            self.pages.widget(j).setSizePolicy(policy, policy)
        self.pages.setCurrentIndex(k)
        self.view_buttons[name].setChecked(True)
        self.position.setText(f"{k + 1} / {len(VIEWS)}")
        self.position.setToolTip(f"View {k + 1} of {len(VIEWS)}: {VIEW_TITLES[name]}")

    def say(self, text: str) -> None:
        """Show ``text`` in the bar ('' hides it): the status bar's messages, which presenting
        hides with the status bar. Breaks allowed after _ and / (a narrow column)."""
        self.said.setText(text.replace("_", "_\u200b").replace("/", "/\u200b"))
        self.said.setVisible(bool(text))

    def page(self, name: str) -> QWidget:
        return self.pages.widget(VIEWS.index(name))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.resized.emit()

    def _on_theme_changed(self, *_args) -> None:
        theme = self.view.theme
        font = theme.font(BAR_POINTS)
        for widget in (*self.view_buttons.values(), *self.controls.values()):
            widget.setFont(font)
        self.position.setFont(theme.font(BAR_POINTS, bold=True))
        self.said.setFont(theme.font(BAR_POINTS, bold=True))
        self.setFont(theme.font(BAR_POINTS))  # what the lent panels' unstyled widgets inherit
