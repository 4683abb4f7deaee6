"""Rows and columns of widgets in one call, so a panel's layout reads as the list of what it holds
(and the panels do not each spell out the same run of ``addWidget`` calls)."""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QLayout, QVBoxLayout, QWidget


class Stretch(int):
    """An item of ``row``/``column``: empty room with this stretch factor."""


class Spacing(int):
    """An item of ``row``/``column``: this many pixels of fixed room."""


Item = QWidget | QLayout | Stretch | Spacing | tuple[QWidget | QLayout, int]


def fill(layout: QBoxLayout, *items: Item) -> QBoxLayout:
    """Add ``items`` to ``layout`` in order: a widget or a layout, ``(it, stretch)``, ``Stretch(n)``
    or ``Spacing(px)``."""
    for item in items:
        thing, stretch = item if isinstance(item, tuple) else (item, 0)
        if isinstance(thing, Stretch):
            layout.addStretch(thing)
        elif isinstance(thing, Spacing):
            layout.addSpacing(thing)
        elif isinstance(thing, QLayout):
            layout.addLayout(thing, stretch)
        else:
            layout.addWidget(thing, stretch)
    return layout


def row(*items: Item, parent: QWidget | None = None, margins: int = 0, spacing: int | None = None) -> QHBoxLayout:
    """A horizontal layout of ``items`` (on ``parent`` when given), ``margins`` px round it."""
    return _box(QHBoxLayout(parent) if parent is not None else QHBoxLayout(), items, margins, spacing)


def column(*items: Item, parent: QWidget | None = None, margins: int = 0, spacing: int | None = None) -> QVBoxLayout:
    """A vertical layout of ``items`` (on ``parent`` when given), ``margins`` px round it."""
    return _box(QVBoxLayout(parent) if parent is not None else QVBoxLayout(), items, margins, spacing)


def _box(layout, items: tuple[Item, ...], margins: int, spacing: int | None):
    layout.setContentsMargins(margins, margins, margins, margins)
    if spacing is not None:
        layout.setSpacing(spacing)
    fill(layout, *items)
    return layout
