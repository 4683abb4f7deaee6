"""Settings fields bound to widgets both ways, from one mapping of field name to widget.

A state (``gradviz.app.state.SchemaState``) has a ``<field>_changed`` signal per field; each
widget shows its field with its own signals blocked (no echo back into the state), and an edit
writes the widget's value back. A widget that cannot show a value (a device not offered, a
number out of its range) shows the nearest it can and writes that back, so what runs is what
the panel shows. Combo boxes hold each value as their items' data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import QComboBox, QWidget


def bind_fields(state: Any, fields: Mapping[str, QWidget], write: Callable[[str, Any], None] | None = None) -> None:
    """Show each field of ``state`` in its widget now and after each change; write each edit back.

    Args:
        state: a SchemaState (``get``, ``set`` and a ``<name>_changed`` signal per name).
        fields: field name to the combo box or spin box that shows it.
        write: what an edit calls with (name, value); ``state.set`` by default.
    """
    write = write or state.set
    for name, widget in fields.items():
        getattr(state, f"{name}_changed").connect(lambda _value, name=name, w=widget: show_value(w, state, name))
        show_value(widget, state, name)
        edited(widget).connect(lambda *_args, name=name, w=widget: write(name, widget_value(w)))


def show_value(widget: QWidget, state: Any, name: str) -> None:
    """Show field ``name`` in ``widget`` with its signals blocked: a combo box selects the item
    whose data is the value, a spin box shows the value clamped to its range."""
    value = state.get(name)
    with QSignalBlocker(widget):
        if isinstance(widget, QComboBox):
            widget.setCurrentIndex(max(widget.findData(value), 0))
        else:
            widget.setValue(min(max(value, widget.minimum()), widget.maximum()))  # type: ignore[attr-defined]
    fit = getattr(widget, "fit_text", None)  # a spin box sized to its text
    if fit is not None:
        fit()
    empty = isinstance(widget, QComboBox) and widget.count() == 0
    if not empty and widget_value(widget) != value:
        state.set(name, widget_value(widget))


def widget_value(widget: QWidget) -> Any:
    """What ``widget`` shows: a combo box's current item data, a spin box's value."""
    return widget.currentData() if isinstance(widget, QComboBox) else widget.value()  # type: ignore[attr-defined]


def edited(widget: QWidget) -> Any:
    """The signal ``widget`` sends when its value changes."""
    return widget.currentIndexChanged if isinstance(widget, QComboBox) else widget.valueChanged  # type: ignore[attr-defined]
