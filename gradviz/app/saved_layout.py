"""Bring back the window's saved geometry and dock layout, so that no saved value can crash it.

Why the order matters: Qt 6's ``QMainWindowLayout::restoreState`` on a window that is not shown
yet but whose window state is maximized or full screen (``restoreGeometry`` of a window that was
quit maximized sets that) keeps a copy of the restored dock layout to apply at a later resize.
That copy shares the layout's items; ``WindowLayout.place`` then removes and tabifies the docks,
and the copy's items are freed under it: a segfault in ``tabifyDockWidget`` on every launch after
quitting maximized. So the dock layout is restored first, while the window is still in its
normal state (Qt applies it at once and keeps no copy), and the geometry after it: Qt's
``restoreGeometry``, then the saved rectangles as they were (``saved_geometry``).

A layout is also checked before Qt reads it: it must name exactly the docks and toolbars this
window has (a layout from another version or another program places some docks and leaves the
others wherever they were). Anything Qt cannot restore or that does not match is dropped, named
in one line, removed from the file, and the default layout is used.
"""

from __future__ import annotations

import re
import struct

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QDockWidget, QMainWindow, QToolBar

from gradviz.app.saved_geometry import place_as_saved, read_geometry

GEOMETRY_KEY = "window/geometry"
STATE_KEY = "window/state"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_NAME_BYTES = 256


def state_names(state: bytes) -> set[str]:
    """The objectNames a ``QMainWindow.saveState`` blob refers to (its docks and toolbars).

    Qt writes each name as a QString: a big-endian 32-bit byte count, then UTF-16BE; the names
    gradviz gives are identifiers, so every such string that reads as one is taken as a name."""
    names = set()
    for k in range(len(state) - 4):
        (length,) = struct.unpack_from(">I", state, k)
        if not 2 <= length <= _MAX_NAME_BYTES or length % 2 or k + 4 + length > len(state):
            continue
        try:
            text = state[k + 4 : k + 4 + length].decode("utf-16-be")
        except UnicodeDecodeError:
            continue
        if _NAME.fullmatch(text):
            names.add(text)
    return names


def state_problem(window: QMainWindow, state: bytes) -> str | None:
    """Why this saved dock layout does not belong to ``window``; None when it does."""
    docks = {dock.objectName() for dock in window.findChildren(QDockWidget)}
    toolbars = {bar.objectName() for bar in window.findChildren(QToolBar)}
    names = state_names(state)
    unknown = sorted(n for n in names if n.startswith("dock_") and n not in docks)
    missing = sorted(docks - names)
    if unknown or missing or not names & toolbars:
        what = [f"panels this window does not have ({', '.join(unknown)})"] if unknown else []
        what += [f"no place for {', '.join(missing)}"] if missing else []
        return "it is not this window's (" + ("; ".join(what) or "no toolbar of this window") + ")"
    return None


def restore(window: QMainWindow, store: QSettings) -> list[str]:
    """Restore the dock layout, then the geometry (see the module's docstring for why in this
    order); each value that cannot be used is removed from ``store``. Returns one sentence per
    value dropped."""
    dropped = []
    if store.contains(STATE_KEY):
        state = store.value(STATE_KEY)
        problem = "Qt cannot read it"
        if isinstance(state, QByteArray):
            problem = state_problem(window, bytes(state)) or (None if window.restoreState(state) else problem)
        if problem:
            store.remove(STATE_KEY)
            dropped.append(f"the saved dock layout ({problem}; the default layout is used)")
    if store.contains(GEOMETRY_KEY):
        geometry = store.value(GEOMETRY_KEY)
        if not isinstance(geometry, QByteArray) or not window.restoreGeometry(geometry):
            store.remove(GEOMETRY_KEY)
            dropped.append("the saved window size and position (Qt cannot read it; the default is used)")
        else:
            saved = read_geometry(bytes(geometry))  # Qt moves a window near the top down: undo that
            if saved is not None:
                place_as_saved(window, saved)
    return dropped
