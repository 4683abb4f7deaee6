"""The Function picker: the built-in library by category, New / Open / recent files, and
which Function of the current file to check.

The tree's highlight follows the document in the editor, however it was loaded; moving through
the tree with the arrow keys loads what is highlighted, as a click does."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradviz.app.theme import ViewSettings
from gradviz.schema.library import CATEGORIES, builtin_functions

if TYPE_CHECKING:
    from gradviz.app.state import CurrentResult, SourceDocument

RECENT_GROUP = "Recent files"
PATH_ROLE = Qt.ItemDataRole.UserRole
KIND_ROLE = Qt.ItemDataRole.UserRole + 1


class LibraryTree(QTreeWidget):
    """The library tree; ``keyboard_moved`` tells which item the arrow keys moved to."""

    keyboard_moved = Signal(object)

    def keyPressEvent(self, event) -> None:
        before = self.currentItem()
        super().keyPressEvent(event)
        after = self.currentItem()
        if after is not None and after is not before:
            self.keyboard_moved.emit(after)


class PickerPanel(QWidget):
    builtin_chosen = Signal(str)  # library entry name, e.g. "linear"
    file_chosen = Signal(str)  # path of a recent file
    new_requested = Signal()
    open_requested = Signal()
    function_chosen = Signal(str)

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        view: ViewSettings | None = None,
        document: SourceDocument | None = None,
        current: CurrentResult | None = None,
    ) -> None:
        """``document``: the code in the editor, highlighted in the tree; ``current``: the check on
        screen, whose Functions the chooser lists."""
        super().__init__(parent)
        self.view = view if view is not None else ViewSettings(self)
        self.document, self.current = document, current
        self._current: tuple[str, str] | None = None  # ("builtin", name) or ("file", path) in the editor
        self.tree = LibraryTree()
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(True)
        self.new_button = QPushButton("New Function…")
        self.open_button = QPushButton("Open…")
        self.functions = QComboBox()
        self.functions.setToolTip("Which Function of this file to check")
        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.open_button)
        chooser = QHBoxLayout()
        chooser.addWidget(QLabel("Function:"))
        chooser.addWidget(self.functions, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(self.tree, 1)
        layout.addLayout(chooser)

        self._groups: dict[str, QTreeWidgetItem] = {}
        self._fill_library()
        self.set_recent([])
        self.tree.itemActivated.connect(self._on_item_activated)
        self.tree.itemClicked.connect(self._on_item_activated)
        self.tree.keyboard_moved.connect(self._on_item_activated)
        self.view.subscribe(self._on_theme_changed)
        self._on_theme_changed()
        self.new_button.clicked.connect(self.new_requested)
        self.open_button.clicked.connect(self.open_requested)
        self.functions.currentTextChanged.connect(lambda name: name and self.function_chosen.emit(name))
        if document is not None:  # the highlight follows the document, also when a load was cancelled
            for signal in (document.path_changed, self.builtin_chosen, self.file_chosen):
                signal.connect(self._on_document_changed)
            if current is not None:
                current.changed.connect(self._on_result_changed)

    def _on_document_changed(self, *_args: Any) -> None:
        document = self.document
        path = document.path if document.path and not document.builtin_name else None
        self.show_document(document.builtin_name, str(path) if path else None)

    def _on_result_changed(self) -> None:
        """The Functions the checked file defines (the check chose one if the document had none)."""
        result = self.current.result
        if result is not None and result.functions:
            self.set_functions(result.functions, self.document.function or result.function)

    def _fill_library(self) -> None:
        bold = QFont()
        bold.setBold(True)
        for category in CATEGORIES:
            group = QTreeWidgetItem(self.tree, [category])
            group.setFont(0, bold)
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self._groups[category] = group
        for entry in builtin_functions():
            group = self._groups.get(entry.category) or self._groups[CATEGORIES[0]]
            item = QTreeWidgetItem(group, [entry.name])
            item.setData(0, PATH_ROLE, entry.name)
            item.setData(0, KIND_ROLE, "builtin")
            tip = entry.docstring
            if entry.bug:
                tip = f"BUG: {entry.bug}\n\n{tip}"
                item.setText(0, f"{entry.name}  ✗")
            item.setToolTip(0, tip)
        self.tree.expandAll()

    def set_recent(self, paths: list[str]) -> None:
        group = self._groups.get(RECENT_GROUP)
        if group is None:
            group = self._groups[RECENT_GROUP] = QTreeWidgetItem(self.tree, [RECENT_GROUP])
            font = QFont()
            font.setBold(True)
            group.setFont(0, font)
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
        group.takeChildren()
        for path in paths:
            item = QTreeWidgetItem(group, [Path(path).name])
            item.setToolTip(0, path)
            item.setData(0, PATH_ROLE, path)
            item.setData(0, KIND_ROLE, "file")
        group.setHidden(not paths)
        group.setExpanded(True)
        self._show_current()

    def select_builtin(self, name: str) -> None:
        """Highlight a library entry without emitting (the window loaded it itself)."""
        self.show_document(name, None)

    def show_document(self, builtin: str | None, path: str | None) -> None:
        """Highlight what the editor shows: a library entry, a recent file, or nothing (new text)."""
        self._current = ("builtin", builtin) if builtin else ("file", str(path)) if path else None
        self._show_current()

    def current_document(self) -> QTreeWidgetItem | None:
        """The highlighted item, when it is the document in the editor."""
        item = self.tree.currentItem()
        return item if item is not None and item.isSelected() else None

    def _show_current(self) -> None:
        with QSignalBlocker(self.tree):
            if self._current is not None:
                kind, key = self._current
                for group in self._groups.values():
                    for k in range(group.childCount()):
                        item = group.child(k)
                        if item.data(0, KIND_ROLE) == kind and item.data(0, PATH_ROLE) == key:
                            self.tree.setCurrentItem(item)
                            item.setSelected(True)
                            return
            self.tree.clearSelection()
            self.tree.setCurrentItem(None)

    def set_functions(self, names: list[str], current: str | None) -> None:
        with QSignalBlocker(self.functions):
            self.functions.clear()
            self.functions.addItems(names)
            if current in names:
                self.functions.setCurrentText(current)
        self.functions.setEnabled(len(names) > 1)

    def builtin_items(self) -> list[QTreeWidgetItem]:
        return [
            group.child(k)
            for group in self._groups.values()
            for k in range(group.childCount())
            if group.child(k).data(0, KIND_ROLE) == "builtin"
        ]

    def _on_theme_changed(self) -> None:
        theme = self.view.theme
        self.setFont(theme.font(QApplication.font().pointSizeF()))
        for group in self._groups.values():
            group.setFont(0, theme.font(QApplication.font().pointSizeF(), bold=True))

    def _on_item_activated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        kind = item.data(0, KIND_ROLE)
        if kind == "builtin":
            self.builtin_chosen.emit(item.data(0, PATH_ROLE))
        elif kind == "file":
            self.file_chosen.emit(item.data(0, PATH_ROLE))
